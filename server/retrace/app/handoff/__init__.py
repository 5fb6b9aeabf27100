"""Hand-off from checkpoints to git: branch export, patch series, the per-turn mirror ref
(plumbing only, a temporary index: the user's working tree, index and branches are untouched)."""
