"""Application services shared by every front end (command line, language server)."""
