"""The scene and its bodies: objects and materials, rigid motion and tracks, driven vehicles, and the
scene's place on the Earth. Importing this package imports nothing.
"""
