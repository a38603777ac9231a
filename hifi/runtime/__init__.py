"""What a run needs from the process it runs in: threads, interrupt handling, progress reports and
disk-space safety. Importing this package imports nothing.
"""
