"""The tools a server lists and answers: which a profile lists (``_catalog``), their
argument models (``_args``), a tool that checks its own arguments (``_tools``), what each
profile does (``_profile``), calls answered without FastMCP's stack (``_direct``), and the
reply shapes (``_results``).
"""
