"""``retrace mcp``: the checkpoint engine offered to any MCP-capable agent over stdio.

An edge of its own, beside ``lsp/`` and ``cli/`` (it imports the engine, the application
services, the protocol models and the relay client; nothing but ``cli/`` imports it):

* ``models.py`` — each tool's input (bounded, strict: JSON types must match) and output models;
* ``query.py`` — pure: which checkpoints a ``list_checkpoints`` page holds (filters, cursor);
* ``access.py`` — the store: reads open it read-only per call (as ``retrace log`` does, so a
  running editor server's writer lock is no obstacle and every call sees the journals as they
  are now); writes (a named checkpoint, a restore) go to the server holding the store through
  the relay (``checkpoint``, ``restore``: through its gate, told to the editor, its conflict
  rules), else open the store for the call;
* ``tools.py`` — the tool table (name, description, input, output, function) and the words;
* ``server.py`` — the official SDK's low-level server over stdio: lists the table, validates a
  call's arguments, runs it in a worker thread one call at a time, answers text + structured
  content; any refusal is a tool error with a one-line message (``isError``), never a crash.

Every request is untrusted: ids are looked up by the engine, paths pass the engine's workspace
rule (``normalize_rel``), sizes are bounded, a restore is a dry run unless ``confirm: true`` and
a conflicting file is never overwritten unless a per-file resolution says so (no ``force``).
"""
