"""Every text a language model is given, one module per prompt (what each asks, in what words,
and how the data travels: always inside a fenced data block, never as instructions).

- ``extraction``: a turn (or a window of document chunks) to facts (``services/facts/write.py``);
- ``chat``: the response model's messages for ``POST /chat`` (``services/conversation/chat``);
- ``reflection`` and ``elaboration``: the memory-care calls (``services/care``).

The data blocks themselves are rules (``rules.turn_data``, ``rules.care_data``), because the
offline provider reads them back. Prompts build text from what they are given: they read and
write nothing (``.importlinter``, "Prompts").
"""
