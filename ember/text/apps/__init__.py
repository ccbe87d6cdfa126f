"""``ember.text``'s command-line applications: ``search`` (``ember-search``, semantic search over
text files) and ``gpt`` (``ember-gpt``, training a small GPT)."""
