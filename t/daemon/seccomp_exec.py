"""seccomp_exec.py UNIT PROGRAM [ARGS...]: runs PROGRAM under the system
call filter of the systemd unit file UNIT, as systemd would apply it
(SystemCallFilter= allow-lists, each @group expanded by systemd-analyze),
but stricter: a call outside the filter kills the process (SIGSYS)
instead of failing, so that none goes unnoticed. Uses libseccomp, which
systemd itself is built on. Exits 77 when libseccomp or systemd-analyze
is missing."""
import ctypes, ctypes.util, os, subprocess, sys

unit, argv = sys.argv[1], sys.argv[2:]
lib = ctypes.util.find_library("seccomp")
if not lib:
    print("SKIP: no libseccomp", file=sys.stderr)
    sys.exit(77)
sc = ctypes.CDLL(lib, use_errno=True)
sc.seccomp_init.restype = ctypes.c_void_p
sc.seccomp_init.argtypes = [ctypes.c_uint32]
sc.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
sc.seccomp_load.argtypes = [ctypes.c_void_p]
sc.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000

groups = {}
def expand(name, seen):
    if name in seen:
        return set()
    seen.add(name)
    if name not in groups:
        try:
            text = subprocess.run(["systemd-analyze", "syscall-filter", name],
                                  check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            print("SKIP: systemd-analyze syscall-filter %s: %s" % (name, e), file=sys.stderr)
            sys.exit(77)
        groups[name] = [w for l in text.splitlines()[1:]
                        for w in l.split() if not l.lstrip().startswith("#")]
    out = set()
    for w in groups[name]:
        out |= expand(w, seen) if w.startswith("@") else {w}
    return out

allowed = set()
for line in open(unit):
    line = line.strip()
    if not line.startswith("SystemCallFilter="):
        continue
    value = line.split("=", 1)[1].split()
    if value and value[0].startswith("~"):
        sys.exit("seccomp_exec: deny-lists are not handled: " + line)
    for w in value:
        allowed |= expand(w, set()) if w.startswith("@") else {w}
if not allowed:
    sys.exit("seccomp_exec: no SystemCallFilter= in " + unit)

ctx = sc.seccomp_init(SCMP_ACT_KILL_PROCESS)
for name in sorted(allowed):
    nr = sc.seccomp_syscall_resolve_name(name.encode())
    if nr < 0:
        continue  # not a call of this architecture: systemd skips it too
    if sc.seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) < 0:
        sys.exit("seccomp_exec: cannot allow " + name)
if sc.seccomp_load(ctx) < 0:
    sys.exit("seccomp_exec: seccomp_load failed")
os.execv(argv[0], argv)
