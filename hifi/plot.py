"""Quick-look plots of hifi datasets (matplotlib, the ``viz`` extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError('plotting needs matplotlib: pip install "hifi[viz]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


PLOT_GROUP = "hifi.plots"


def _registered_plot(sensor_model):
    """Plot function registered for ``sensor_model`` in the entry-point group ``hifi.plots``.

    A model package that produces a dataset hifi's built-in quick looks do not cover (a GNSS
    receiver, a camera) registers ``sensor_model = "package.module:function"``; the function
    is called as ``function(ds, out, frame=frame)`` and returns the PNG path.
    """
    if not sensor_model:
        return None
    from importlib.metadata import entry_points
    for ep in entry_points(group=PLOT_GROUP):
        if ep.name == sensor_model:
            return ep.load()
    return None


def plot_dataset(ds, out, frame: int = 0, color: str = "object") -> Path:
    """Write a PNG quick look of one frame of ``ds`` and return its path.

    A depth image (``depth`` over ``row``/``col``) is shown as an image with its object ids
    beside it; a range sensor as a bird's-eye view (x east, y north) coloured by object id or
    by height (``color = "object" | "height"``) beside its range image (reported distance over
    the sensor's two dimensions); ``motion.nc`` as the trajectories of every body.
    """
    if color not in ("object", "height"):
        raise ValueError(f"color = {color!r}: expected 'object' or 'height'")
    plt = _pyplot()
    out = Path(out)
    name = ds.attrs.get("sensor_name", "dataset")
    custom = _registered_plot(ds.attrs.get("sensor_model"))
    if custom is not None:
        return Path(custom(ds, out, frame=frame))
    if "depth" in ds and {"row", "col"} <= set(ds["depth"].dims):
        fr = ds.isel(frame=frame)
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True)
        im = axes[0].imshow(fr["depth"].values, cmap="viridis")
        fig.colorbar(im, ax=axes[0], label="depth [m]")
        axes[0].set_title(f"{name}: depth, frame {int(fr['frame'])}")
        ids = np.asarray(fr["object_id"].values, dtype=float)
        ids[ids < 0] = np.nan
        im2 = axes[1].imshow(ids, cmap="tab20", interpolation="nearest")
        fig.colorbar(im2, ax=axes[1], label="object id")
        axes[1].set_title("object id")
    elif "position" in ds and "body" in ds.dims:
        fig, ax = plt.subplots(figsize=(7, 6), constrained_layout=True)
        for b in range(ds.sizes["body"]):
            p = ds["position"].isel(body=b).values
            ax.plot(p[:, 0], p[:, 1], ".-", ms=2, label=str(ds["body"].values[b]))
        ax.set_aspect("equal")
        ax.set_xlabel("x (east) [m]")
        ax.set_ylabel("y (north) [m]")
        ax.legend(fontsize="small")
        ax.set_title("ground-truth trajectories")
    elif "x" in ds:
        fr = ds.isel(frame=frame)
        pts = fr.hifi.points(noisy=True)
        det = np.asarray(fr["detected"].values, bool).ravel() if "detected" in fr else \
            np.isfinite(np.asarray(fr["x"].values, float)).ravel()
        grid = "distance_noisy" in fr and fr["distance_noisy"].ndim == 2
        fig, axes = plt.subplots(1, 2 if grid else 1, figsize=(15 if grid else 8, 6.5),
                                 constrained_layout=True, squeeze=False)
        ax = axes[0, 0]
        if color == "height":
            sc = ax.scatter(pts[:, 0], pts[:, 1], c=pts[:, 2], s=1, cmap="viridis")
            fig.colorbar(sc, ax=ax, label="z (up) [m]")
        else:
            oid = np.asarray(fr["object_id"].values).ravel()[det]
            sc = ax.scatter(pts[:, 0], pts[:, 1], c=oid, s=1, cmap="tab20")
            fig.colorbar(sc, ax=ax, label="object id")
        ax.set_aspect("equal")
        ax.set_xlabel("x (east) [m]")
        ax.set_ylabel("y (north) [m]")
        ax.set_title(f"{name}: bird's-eye view, frame {int(fr['frame'])}, {len(pts)} returns")
        if grid:
            rng = fr["distance_noisy"]
            img = np.asarray(rng.values, dtype=float)
            # Range image: sensor elevation upward, scan order left to right.
            pitch = np.asarray(fr["pitch"].values, dtype=float)
            rows_are_dim0 = np.nanstd(np.nanmean(pitch, axis=1)) > np.nanstd(np.nanmean(pitch, axis=0))
            img = img if rows_are_dim0 else img.T
            order = np.argsort(-np.nanmean(pitch if rows_are_dim0 else pitch.T, axis=1))
            im = axes[0, 1].imshow(img[order], aspect="auto", cmap="turbo", interpolation="nearest")
            fig.colorbar(im, ax=axes[0, 1], label="reported distance [m]")
            axes[0, 1].set_title("range image (rows sorted by elevation, top = highest)")
            axes[0, 1].set_xlabel(rng.dims[0] if not rows_are_dim0 else rng.dims[1])
            axes[0, 1].set_ylabel("beam, by elevation")
    else:
        raise ValueError(f"no plot for dataset {name!r} (sensor_model {ds.attrs.get('sensor_model')!r}): "
                         "expected a depth image, points (x, y, z) or motion poses")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
