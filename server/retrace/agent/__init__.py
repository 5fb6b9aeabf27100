"""Retrace agent: the Claude loop, its tools, the conversation, permissions and the replay buffer."""
