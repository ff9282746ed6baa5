"""Pure domain rules: what the services and the offline model provider both follow.

No ports, no I/O, no settings; these modules import only the kernel, ``lexicon`` and the
standard library (``.importlinter``, "Rules"), so an adapter may use them without depending
on services, and the models may use them too.

- ``vocabulary``: the registry of attribute keys and relation labels (``normalise_key``,
  cardinality, default category).
- ``event_time``: event-time phrases ("last month") and their resolution to instants;
  ``months``: which month a yearless month name means.
- ``self_entity``: who "I" is (the self entity ``entity:person/user``) and name -> entity id.
- ``turn_data``: the extraction prompt's fenced JSON data block, written and read.

Nothing is imported here, so importing one rule loads only that module.
"""
