"""Pictures of outputs: plots per sensor (entry-point group ``hifi.plots``), the self-contained HTML
replay page (``hifi view``), and image helpers. Importing this package imports nothing.
"""
