"""The relay tests share the suite's fixtures (``relay_dir``: tests/conftest.py); the editor stand-in
is ``tests.lsp.lsp_support``, imported by its package path."""
