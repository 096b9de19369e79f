# SPDX-License-Identifier: Apache-2.0
"""Build of the `_kpu` C extension, the `KPU` shim and the `openkpu` package.

    pip install .

`_kpu` = python/_kpumodule.c (the CPython binding) + python/_kpu_post.c (post-processing functions) +
python/_kpu_device.c (the virtual board's KPU register block) + every c_src/*/*.c (the portable C99 core, globbed at build
time so new core files need no change here). The core is compiled with its own flags: -std=c99 -O3 -Wall -Wextra
-Werror (the same warnings the Makefile enforces). Set OPENKPU_NO_WERROR=1 to drop -Werror, e.g. with a compiler
newer than the one the project is checked with. The binding is compiled with -std=c99 -O2 -Wall -Wextra (no -Werror:
Python's own headers are not ours to keep warning-free on every compiler).
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup, Extension
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))

CORE_FLAGS = ["-std=c99", "-O3", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes"]
# POSIX systems have threads: the emulator's forward pass runs on a worker pool (c_src/core/workers.c); elsewhere the
# core runs one thread.
THREAD_FLAGS = ["-DOKPU_HAVE_PTHREADS", "-pthread"] if os.name == "posix" else []
CORE_FLAGS += THREAD_FLAGS
if not os.environ.get("OPENKPU_NO_WERROR"):
    CORE_FLAGS.append("-Werror")
BINDING_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]


def core_sources():
    # Relative paths: setuptools wants them, and the sdist / build tree keep the same layout.
    return sorted(glob.glob(os.path.join("c_src", "*", "*.c")))


class BuildExt(build_ext):
    """Compile the core with its own warning flags, then link it into the extension."""

    def build_extension(self, ext):
        if ext.name == "_kpu":
            sources = core_sources()
            if not sources:
                raise RuntimeError("no C core sources found under c_src/*/*.c")
            objects = self.compiler.compile(
                sources,
                output_dir=self.build_temp,
                include_dirs=["c_src"],
                extra_postargs=CORE_FLAGS,
                depends=sorted(glob.glob(os.path.join("c_src", "*.h")) + glob.glob(os.path.join("c_src", "*", "*.h"))
                               + glob.glob(os.path.join("c_src", "*", "*.def"))),
            )
            ext.extra_objects = list(ext.extra_objects or []) + objects
        build_ext.build_extension(self, ext)
        if ext.name == "_kpu":
            self._check_core_linked(self.get_ext_fullpath(ext.name))

    @staticmethod
    def _check_core_linked(path):
        """A shared object links with undefined symbols; catch a core function that no c_src file defines now,
        at build time, instead of as an ImportError later (needs binutils' nm; skipped without it)."""
        nm = shutil.which("nm")
        if not nm or not os.path.exists(path):
            return
        try:
            out = subprocess.run([nm, "-u", "-D", path], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return
        missing = sorted({line.split()[-1] for line in out.splitlines()
                          if line.split() and line.split()[-1].startswith(("okpu_", "kpu_"))})
        if missing:
            raise RuntimeError("_kpu: these core symbols are used but no c_src/*/*.c defines them: %s"
                               % ", ".join(missing))


kpu_ext = Extension(
    "_kpu",
    # the binding proper + the post-processing functions (python/_kpu_post.c, registered by the module init)
    sources=["python/_kpumodule.c", "python/_kpu_post.c", "python/_kpu_device.c"],
    include_dirs=["c_src"],
    extra_compile_args=BINDING_FLAGS,
    libraries=["m"] if os.name == "posix" else [],
    extra_link_args=THREAD_FLAGS[1:],
    depends=["c_src/okpu.h"],
)

setup(
    package_dir={"openkpu": "python/openkpu", "": "modules/KPU"},
    packages=["openkpu", "openkpu.board", "openkpu.board.maix", "openkpu.vboard"],
    py_modules=["KPU"],
    ext_modules=[kpu_ext],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
