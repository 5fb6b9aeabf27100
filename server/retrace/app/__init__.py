"""Application services: use cases built on the engine and the agent, shared by the CLI and the server."""
