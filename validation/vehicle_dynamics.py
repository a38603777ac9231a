"""The driven vehicle's dynamic bicycle against its steady-state closed form, and its actuator ramps.

Steady state: the ``dynamic`` vehicle model (``vehicle = { model = "dynamic" }``, the car preset:
Rajamani's ch. 3 example car, m = 1573 kg, I_z = 2873 kg m^2, l_f = 1.1 m, l_r = 1.58 m,
C_f = C_r = 160000 N/rad per axle) driven at constant speed with the front wheels at 1 deg
settles at the yaw rate ``r = delta v / (L + K_us v^2 / g)``, ``K_us = W_f / C_f - W_r / C_r``
(Gillespie 1992, eq. 6-15; Rajamani 2012, sec. 3.3). One car per speed, 5-30 m/s, each brought
to speed fast (10 m/s^2, no jerk limit: the ramp is not what is measured) and left 3 s to
settle; the yaw rate of its last step over delta against the closed form, and the kinematic
bicycle's v / L beside them.

Ramps: the default car from rest, commanded 10 m/s and 10 deg at t = 0 and 0 m/s and -10 deg at
t = 6 s: the speed follows the jerk-limited profile (2.5 m/s^3 within 3 m/s^2) and the steering
the rate limit (30.6 deg/s), from the vehicle's first step after each command.

References: R. Rajamani, Vehicle Dynamics and Control, 2nd ed., Springer 2012, sec. 2.3 (eq.
2.31) and 3.3; T. D. Gillespie, Fundamentals of Vehicle Dynamics, SAE 1992, ch. 6.

    python validation/vehicle_dynamics.py [--markdown FILE] [--figure FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SPEEDS_M_S = (5.0, 10.0, 15.0, 20.0, 25.0, 30.0)
STEER_DEG = 1.0
RAMP_COMMANDS = [(0.0, 10.0, 10.0), (6.0, 0.0, -10.0)]


def _commander(name, target, schedule):
    from hifi.api.bus import Command
    from hifi.api.model import Model

    class Commander(Model):
        """Publishes the ``drive`` commands of ``schedule`` [(t_s, speed_m_s, steer_deg)]."""

        model_name = "commander"
        writes_dataset = False

        def step(self, k, t):
            for ts, v, steer in schedule:
                if abs(ts - t) < 1e-12:
                    self.ctx.bus.publish(Command(self.name, t, target=target, name="drive",
                                                 value={"speed_m_s": v, "steer_deg": steer}))
            return None

    return Commander(name, {}, rate_hz=10.0)


def run():
    import hifi
    from hifi.world.vehicle import VEHICLE_PRESETS, steady_state_yaw_rate_gain, understeer_gradient

    car = VEHICLE_PRESETS["car"]
    k_us = understeer_gradient(car["mass_kg"], car["wheelbase_m"], car["cog_to_front_axle_m"],
                               car["cornering_stiffness_front_n_rad"], car["cornering_stiffness_rear_n_rad"])
    objects = [{"name": "ground", "mesh": "plane", "size_m": [100, 100]}]
    fast = {"model": "dynamic", "max_speed_m_s": 35.0, "max_accel_m_s2": 10.0, "max_jerk_m_s3": 0.0,
            "follow_ground": False}
    for i, _ in enumerate(SPEEDS_M_S):
        objects.append({"name": f"car{i}", "mesh": "box", "size_m": [1, 1, 1], "position_m": [0, 20.0 * i, 0],
                        "vehicle": fast})
    sim = hifi.Simulation.from_dict({"simulation": {"duration_s": 6.0, "seed": 1}, "objects": objects})
    for i, v in enumerate(SPEEDS_M_S):
        sim.add_model(_commander(f"cmd{i}", f"car{i}", [(0.0, v, STEER_DEG)]))
    out = sim.run(out=None)
    delta = np.radians(STEER_DEG)
    gains = []
    for i, v in enumerate(SPEEDS_M_S):
        gains.append({"speed_m_s": v, "closed_form": float(steady_state_yaw_rate_gain(v, car["wheelbase_m"], k_us)),
                      "simulated": float(out[f"car{i}"].yaw_rate.values[-1]) / delta,
                      "kinematic": v / car["wheelbase_m"]})
    ramp_sim = hifi.Simulation.from_dict({"simulation": {"duration_s": 12.0, "seed": 1},
                                          "objects": [objects[0], {"name": "car", "mesh": "car",
                                                                   "vehicle": {"follow_ground": False}}]})
    ramp_sim.add_model(_commander("cmd", "car", RAMP_COMMANDS))
    ramp = ramp_sim.run(out=None)["car"]
    return {"k_us": k_us, "gains": gains,
            "ramp": {k: np.asarray(ramp[k].values, dtype=float)
                     for k in ("speed", "speed_command", "acceleration", "steer", "steer_command")}}


def markdown(result) -> str:
    out = [f"Understeer gradient K_us = {result['k_us']:.5f} rad ({np.degrees(result['k_us']):.3f} deg per g).", "",
           "| v [m/s] | r/delta closed form [1/s] | simulated [1/s] | simulated / closed form | kinematic v/L [1/s] "
           "| kinematic / closed form |", "|---|---|---|---|---|---|"]
    for g in result["gains"]:
        out.append(f"| {g['speed_m_s']:g} | {g['closed_form']:.5f} | {g['simulated']:.5f} | "
                   f"{g['simulated'] / g['closed_form']:.5f} | {g['kinematic']:.5f} | "
                   f"{g['kinematic'] / g['closed_form']:.4f} |")
    r = result["ramp"]
    out += ["", f"Ramps (car preset): largest |acceleration| {np.abs(r['acceleration']).max():.3f} m/s^2 (limit 3), "
                f"largest step-to-step change {np.abs(np.diff(r['acceleration'])).max():.4f} m/s^2 per 20 ms "
                f"(jerk limit 2.5 m/s^3: 0.05); largest steering change "
                f"{np.degrees(np.abs(np.diff(r['steer'])).max()):.4f} deg per 20 ms (rate limit 30.6 deg/s: 0.612)."]
    return "\n".join(out)


def figure(path, result=None) -> None:
    """Left: yaw-rate gain against speed, closed form, simulated, kinematic. Right: the ramps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    result = run() if result is None else result
    from hifi.world.vehicle import VEHICLE_PRESETS, steady_state_yaw_rate_gain
    L = VEHICLE_PRESETS["car"]["wheelbase_m"]
    v = np.linspace(0.0, 32.0, 200)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 3.9))
    ax.plot(v, steady_state_yaw_rate_gain(v, L, result["k_us"]), "k", lw=1.2, label="v / (L + K_us v^2 / g)")
    ax.plot(v, v / L, "--", color="0.5", lw=1, label="kinematic v / L")
    g = result["gains"]
    ax.plot([x["speed_m_s"] for x in g], [x["simulated"] for x in g], "o", mfc="none", color="tab:red",
            label="dynamic model, steady state")
    ax.set_xlabel("speed [m/s]")
    ax.set_ylabel("yaw-rate gain r / delta [1/s]")
    ax.set_title("steady-state yaw-rate gain (car preset)")
    ax.legend(fontsize=8)
    r = result["ramp"]
    t = np.arange(r["speed"].size) / 50.0
    bx.step(t, r["speed_command"], "--", where="post", color="tab:blue", lw=1, label="speed command [m/s]")
    bx.plot(t, r["speed"], color="tab:blue", label="speed [m/s]")
    bx.plot(t, r["acceleration"], color="tab:green", lw=1, label="acceleration [m/s^2]")
    bx.step(t, np.degrees(r["steer_command"]), "--", where="post", color="tab:red", lw=1,
            label="steering command [deg]")
    bx.plot(t, np.degrees(r["steer"]), color="tab:red", label="steering [deg]")
    bx.set_xlabel("time [s]")
    bx.set_title("commands through the actuator limits")
    bx.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from weather import table_cli
    cache = {}

    def run_once():
        cache.setdefault("r", run())
        return cache["r"]

    return table_cli(__doc__, run_once, markdown, argv, figure_fn=lambda p: figure(p, run_once()))


if __name__ == "__main__":
    sys.exit(main())
