"""Measures on outputs: lidar statistics (road plane, ground mask, intensity slope) and the comparison
metrics between simulated and real data. Importing this package imports nothing.
"""
