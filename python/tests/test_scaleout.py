"""karoo at scale: pyuvdata's UVH5 writer, Dask distributed with process workers (h5py
and xarray with dask chunks), and a parallel HDF5 collective write under `mpirun -np 2`
(Debian's python3-h5py-mpi and openmpi-bin; skipped with the reason when missing)."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

import karoo
from conftest import needs_shared, same_bits, shared_files, visibilities


# ---------------------------------------------------------------------------------------
# pyuvdata
# ---------------------------------------------------------------------------------------


def _simulated_uvdata():
    import astropy.units as u
    from astropy.coordinates import EarthLocation
    from pyuvdata import Telescope, UVData

    telescope = Telescope.new(
        name="karoo-test", instrument="karoo-test", mount_type="fixed",
        location=EarthLocation.from_geodetic(21.43 * u.deg, -30.72 * u.deg, 1050 * u.m),
        antenna_positions={0: [0.0, 0, 0], 1: [14.6, 0, 0], 2: [0, 14.6, 0], 3: [14.6, 14.6, 0]},
    )
    uvd = UVData.new(freq_array=np.linspace(100e6, 120e6, 128), polarization_array=["xx", "yy"],
                     telescope=telescope, times=2459000.0 + np.arange(12) * 10 / 86400,
                     antpairs=[(0, 1), (0, 2), (1, 2), (2, 3)], do_blt_outer=True, empty=True)
    ntimes, nbls = 12, 4
    vis = visibilities((ntimes, nbls, 128, 2), "c16").reshape(uvd.data_array.shape)
    uvd.data_array[...] = vis
    return uvd


def _uvdata_cases():
    cases = [pytest.param(None, id="simulated")]
    for path in shared_files():
        cases.append(pytest.param(path, id=path.name[:24]))
    return cases


@pytest.mark.parametrize("path", _uvdata_cases())
def test_pyuvdata_write_uvh5_with_karoo_round_trips(tmp_path, path):
    pyuvdata = pytest.importorskip("pyuvdata")
    if path is None:
        uvd = _simulated_uvdata()
    else:
        try:
            uvd = pyuvdata.UVData.from_file(str(path))
        except Exception as error:  # a pyuvdata limitation, before karoo is involved
            pytest.skip(f"pyuvdata cannot read {path.name}: {type(error).__name__}")
    out = tmp_path / "k.uvh5"
    uvd.write_uvh5(str(out), data_compression=karoo.Karoo(), clobber=True)
    with h5py.File(out, "r") as f:
        assert "52033" in f["Data/visdata"]._filters
    back = pyuvdata.UVData.from_file(str(out))
    assert same_bits(back.data_array, uvd.data_array)
    assert same_bits(back.flag_array, uvd.flag_array)


# ---------------------------------------------------------------------------------------
# Dask distributed
# ---------------------------------------------------------------------------------------


def _write_part(path, start, stop):
    """Runs on a worker process: writes rows start:stop of the test series to its own file."""
    import h5py

    import karoo
    from conftest import visibilities

    data = visibilities((256, 32, 4), "c8")[start:stop]
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=data, chunks=(16, 32, 4), compression=karoo.Karoo())
    return os.getpid()


def _read_sum(path, start, stop):
    """Runs on a worker process: reads rows of a karoo dataset."""
    import h5py

    with h5py.File(path, "r") as f:
        return f["vis"][start:stop].sum(), os.getpid()


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    here = str(pathlib.Path(__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, preload=["karoo"])
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_dask_process_workers_write_and_read_karoo(client, tmp_path):
    data = visibilities((256, 32, 4), "c8")
    parts = [(str(tmp_path / f"part{i}.h5"), i * 64, (i + 1) * 64) for i in range(4)]
    pids = client.gather([client.submit(_write_part, *p, pure=False) for p in parts])
    assert os.getpid() not in pids
    back = np.concatenate([h5py.File(p, "r")["vis"][...] for p, _, _ in parts])
    assert same_bits(back, data)
    full = tmp_path / "full.h5"
    with h5py.File(full, "w") as f:
        f.create_dataset("vis", data=data, chunks=(16, 32, 4), compression=karoo.Karoo(mode="archive"))
    sums = client.gather([client.submit(_read_sum, str(full), s, s + 32) for s in range(0, 256, 32)])
    assert np.isclose(sum(s for s, _ in sums), data.sum())
    assert os.getpid() not in {pid for _, pid in sums}


def test_xarray_with_dask_chunks_reads_karoo_through_h5netcdf(client, tmp_path):
    xr = pytest.importorskip("xarray")
    vis = visibilities((64, 21, 32, 4), "f4")
    ds = xr.Dataset({"vis": (("time", "baseline", "frequency", "polarization"), vis)})
    path = tmp_path / "x.h5"
    encoding = {"vis": {**karoo.Karoo(), "chunksizes": (16, 21, 32, 4)}}
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding)
    with h5py.File(path, "r") as f:
        assert "52033" in f["vis"]._filters
    opened = xr.open_dataset(path, engine="h5netcdf", chunks={"time": 16})
    assert opened["vis"].chunks[0] == (16, 16, 16, 16)
    total = opened["vis"].sum().compute()  # on the process workers, through the client
    assert np.isclose(float(total), float(vis.astype("f8").sum()), rtol=1e-6)
    assert same_bits(opened["vis"].values, vis)


# ---------------------------------------------------------------------------------------
# MPI: parallel HDF5 collective write
# ---------------------------------------------------------------------------------------

MPI_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from mpi4py import MPI
    import h5py
    import karoo

    path = sys.argv[1]
    comm = MPI.COMM_WORLD
    rows = 32
    rng = np.random.default_rng(7)
    t = np.arange(rows * comm.size)[:, None, None]
    data = (np.sin(t / 11.0) * rng.normal(size=(1, 64, 4)) + 1e-3 * rng.normal(size=(rows * comm.size, 64, 4)))
    data = data.astype("f4")
    assert h5py.get_config().mpi, "h5py is not built with MPI"
    with h5py.File(path, "w", driver="mpio", comm=comm) as f:
        d = f.create_dataset("vis", shape=data.shape, dtype="f4", chunks=(16, 64, 4),
                             compression=karoo.Karoo())
        with d.collective:
            d[comm.rank * rows:(comm.rank + 1) * rows] = data[comm.rank * rows:(comm.rank + 1) * rows]
    comm.Barrier()
    with h5py.File(path, "r", driver="mpio", comm=comm) as f:
        back = f["vis"][...]
        stored = f["vis"].id.get_storage_size()
    assert back.tobytes() == data.tobytes(), "read back differs"
    assert stored < data.nbytes
    oks = comm.gather(True, root=0)
    if comm.rank == 0:
        print(f"ranks ok: {len(oks)}")
""")


def _mpi_python():
    """(mpirun, python) for Debian's MPI h5py, or a skip reason."""
    mpirun = shutil.which("mpirun")
    python = "/usr/bin/python3"
    if mpirun is None:
        return None, "mpirun not installed (apt install openmpi-bin)"
    probe = subprocess.run([python, "-c", "import mpi4py, h5py._debian_h5py_mpi"], capture_output=True)
    if probe.returncode != 0:
        return None, "Debian's python3-h5py-mpi not installed (apt install python3-h5py-mpi)"
    return (mpirun, python), None


def _mpi_env(shim):
    """The environment for Debian's MPI Python under mpirun: only the karoo package on the
    path (in the folder `shim`; numpy, h5py and mpi4py are Debian's), root and
    oversubscription allowed, no HDF5_PLUGIN_PATH."""
    shim.mkdir(exist_ok=True)
    if not (shim / "karoo").exists():
        (shim / "karoo").symlink_to(pathlib.Path(karoo.__file__).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_PLUGIN_PATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(shim), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader,tcp")
    return env


def test_mpirun_np2_collective_write_of_a_karoo_dataset(tmp_path):
    found, reason = _mpi_python()
    if found is None:
        pytest.skip(reason)
    mpirun, python = found
    script = tmp_path / "mpi_write.py"
    script.write_text(MPI_SCRIPT)
    env = _mpi_env(tmp_path / "path")
    done = subprocess.run([mpirun, "-np", "2", python, str(script), str(tmp_path / "mpi.h5")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ranks ok: 2" in done.stdout.splitlines()
    # and the file is an ordinary karoo file for the serial h5py of the venv
    with h5py.File(tmp_path / "mpi.h5", "r") as f:
        assert karoo.Karoo.from_dataset(f["vis"]) == karoo.Karoo()
        assert f["vis"].shape == (64, 64, 4)
