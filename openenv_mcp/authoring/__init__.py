"""For environment authors: the contract checker (:mod:`.testing`), ``openenv-mcp check``
(:mod:`.check`), the manifest derived from an environment (:mod:`.manifest`) and
``openenv-mcp init`` (:mod:`.scaffold`, its ``templates/``)."""
