"""The model interface: one way for the agent to ask a model, whoever answers.

The agent (loop, compaction, subagents, retries) talks only to :class:`ModelClient`
(:mod:`.interface`); a provider module maps the agent's one conversation form (the journal's
Messages-API-shaped blocks) to its wire and back. ``retrace.model.provider`` chooses it
(:mod:`.settings`); the composition root builds it.
"""
