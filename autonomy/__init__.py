"""autonomy: the closed-loop models of hifi, which read the message bus and drive a vehicle.

- :mod:`autonomy.drivers`: ``waypoint_driver``, pure pursuit through waypoints on the pose its
  navigation perceives (the truth, a GPS receiver's fixes or an INS estimate);
- :mod:`autonomy.planner`: ``gonogo_planner``, VANE's go/no-go map from the range sensors'
  points, a shortest path over it, pure pursuit along it;
- :mod:`autonomy.ins`: ``ins``, a loosely coupled GNSS/INS error-state Kalman filter over an IMU
  and a GPS receiver;
- :mod:`autonomy.ins_plot`, :mod:`autonomy.vehicle_plot`: their ``hifi plot`` figures (the
  vehicle plot draws the driven body's own dataset and the waypoint driver's alike).

They are ``[[models]]`` entries of a scenario. hifi finds them, as every model and plot, through
the entry-point groups ``hifi.models`` and ``hifi.plots`` declared in ``pyproject.toml``, and
never imports this package by name. The body they drive, the bicycle (kinematic or dynamic) of an
``[[objects]]`` entry with ``vehicle = { ... }`` (:mod:`hifi.world.vehicle`), is part of the scene
and stays in hifi.

Importing this package imports nothing else: each module loads when its model or plot is named.
"""
