"""Range and pose sensor models for hifi, registered in the ``hifi.models`` entry-point group.

Importing this package is cheap and builds nothing; hifi finds the models through the entry
points, never by importing this package by name.
"""
