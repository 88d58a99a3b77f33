"""The entry points a built C library exports to the runner, and their sizes.

Their own file because the build (build.py) and the backend's front (backend.py) need them
without the emitters: a no-change `nxc test` asks the backend its build identity only, and
importing units.py (jinja2, the function emitters) cost about a sixth of that run.
"""
from __future__ import annotations

# The entry points a gate run needs (loaded with cffi's dlopen: see build_c),
# and those of checked mode (stubs in an unchecked build; nxc_checked() says which).
GATE_CDEF = ("int nxc_run_main(int64_t *result);", "int nxc_gate_site(void);",
             "int nxc_trap_site(void);", "const char *nxc_trap_kind(void);",
             "int64_t nxc_gate_captured(int slot);", "uint32_t nxc_gate_captured_mask(void);",
             "int nxc_checked(void);", "void nxc_fault_info(int64_t *out);", "int nxc_stack_depth(void);",
             "int nxc_stack_frame(int k);", "int nxc_stack_mirror(void *page, int64_t nbytes);",
             "int64_t nxc_stack_bytes(void);",
             "int nxc_buf_register(void *p, int64_t nbytes, int arg);", "void nxc_buf_clear(void);",
             "int nxc_probe(void *p, int64_t size, int64_t align);",
             "const char *nxc_file_log(void);", "int64_t nxc_file_log_bytes(void);",
             "int nxc_set_threads(int n);", "int nxc_threads(void);")
FAULT_INFO_WORDS = 10
# ... and those a separately compiled gate's loader binds its modules with
# (runtime/nx_runtime.c: only in a linked library, never a single file's).
LINK_CDEF = ("int nxc_module_count(void);", "int nxc_modules_bound(void);",
             "int nxc_module_bind(const char *id, int32_t base, int root);")
