"""Twin naming rule (dh_comms/README.md), shared by the device test checkers."""
import subprocess

PREFIX = "__nano_twin_"


def demangle(names, cxxfilt):
    out = subprocess.run([cxxfilt], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return dict(zip(names, out))


def check_pairs(kernels, cxxfilt):
    """kernels: set of entry names. Returns (pairs, errors): pairs maps each
    original to its twin; errors lists originals without a valid twin."""
    originals = sorted(k for k in kernels if not k.startswith(PREFIX))
    twins = {k for k in kernels if k.startswith(PREFIX)}
    names = originals + [t[len(PREFIX):] for t in twins]
    dem = demangle(names, cxxfilt)
    pairs, errors = {}, []
    for k in originals:
        if not k.startswith("_Z"):
            cand = [PREFIX + k]
        else:
            cand = [PREFIX + k + "Pv", PREFIX + k[:-1] + "Pv"]
        found = [c for c in cand if c in twins]
        if len(found) != 1:
            errors.append("%s: no twin among %s" % (k, cand))
            continue
        t = found[0]
        if k.startswith("_Z"):
            d, dt = dem[k], dem[t[len(PREFIX):]]
            want = d[:-2] + "(void*)" if d.endswith("()") else d[:-1] + ", void*)"
            if dt != want:
                errors.append("%s: twin demangles to %r, want %r" % (k, dt, want))
                continue
        pairs[k] = t
    extra = twins - set(pairs.values())
    for t in sorted(extra):
        errors.append("%s: twin without an original" % t)
    return pairs, errors
