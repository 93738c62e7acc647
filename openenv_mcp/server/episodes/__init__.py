"""The episodes a server holds: handles, locks and limits (``_episodes``), what each tool
does to them (``_handlers``), and where each episode's pipeline lives (``_runtime``:
inline or threads; ``_workers``: worker processes).
"""
