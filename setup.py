"""Builds libh5karoo.so with cargo and ships it inside the `karoo` package.

The library is not a Python extension module (Python loads it with ctypes, HDF5 with
dlopen), so the wheel does not depend on the Python version or ABI: it is tagged
``py3-none-<platform>``, as hdf5plugin's wheels are. Set CARGO_TARGET_DIR to build
elsewhere than ./target, KAROO_CARGO_PROFILE to use another cargo profile than release.
scripts/build_wheels.sh sets KAROO_PREBUILT_LIBRARY (a library built elsewhere, for
example cross-compiled; cargo is then not run) and KAROO_WHEEL_PLATFORM (the wheel's
platform tag, such as manylinux_2_17_aarch64).
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
LIBRARY = {"darwin": "libh5karoo.dylib", "win32": "h5karoo.dll"}.get(sys.platform, "libh5karoo.so")


class BuildWithCargo(build_py):
    """build_py that first builds the plugin with cargo and copies it into karoo/plugins/."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "karoo", "plugins")
        os.makedirs(dest, exist_ok=True)
        prebuilt = os.environ.get("KAROO_PREBUILT_LIBRARY")
        if prebuilt:
            shutil.copyfile(prebuilt, os.path.join(dest, LIBRARY))
            return
        profile = os.environ.get("KAROO_CARGO_PROFILE", "release")
        cargo = os.environ.get("CARGO", "cargo")
        if shutil.which(cargo) is None:
            raise SystemExit("karoo: cargo not found; install Rust 1.89 or newer (https://rustup.rs)")
        subprocess.run([cargo, "build", "--locked", "-p", "h5karoo", "--profile", profile],
                       cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        built = os.path.join(target, "release" if profile == "release" else profile, LIBRARY)
        shutil.copyfile(built, os.path.join(dest, LIBRARY))


class PlatformWheel(bdist_wheel):
    """A wheel for any Python 3 on this platform."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", os.environ.get("KAROO_WHEEL_PLATFORM", platform)


class BinaryDistribution(Distribution):
    """Marks the distribution as holding platform-specific files."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithCargo, "bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
