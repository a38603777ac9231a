"""What a model author uses: the model base classes and their declared outputs, parameters and their
validation, the model registry (entry-point group ``hifi.models``), the message bus, random
streams, GNSS time scales, the cost estimate a model states (memory and output size) and the built-
in mesh generators with their parameters (the estimate counts their faces), among them the terrain
of a GeoTIFF elevation model (:mod:`hifi.api.dem`). Importing this package imports nothing.
"""
