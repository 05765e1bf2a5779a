#!/usr/bin/env python3
"""Checks the workspace's stated `rust-version` against what the locked
dependency graph declares it needs.

This machine has one Rust toolchain, so no build on the oldest supported one
runs here. What can be checked is checked: for fusebox with no feature, with
each feature alone and with all of them, and for every other workspace member,
every package the locked graph builds (normal and build dependencies, this
platform) declares a `rust-version` at most the member's own. Std APIs newer
than `rust-version` are caught by clippy's `incompatible_msrv` lint, which
`cargo clippy -D warnings` runs. Prints the largest need of each feature set.

    python3 .ci/msrv.py
"""
import json
import subprocess
import sys

# Features whose locked dependencies need more than fusebox's rust-version,
# as the README's install section states them (redis, and url through idna's
# icu crates, declare 1.88).
FEATURE_NEEDS = {
    "fleet": "1.88", "fleet-tls": "1.88", "test-util": "1.88",
    "reqwest": "1.88", "json": "1.88",
}


def version(v):
    return tuple(int(x) for x in (v or "0").split("."))


def metadata(*args):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked",
         "--filter-platform", "x86_64-unknown-linux-gnu", *args],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def needs(meta, member, *args):
    """(largest rust-version, the packages declaring it, the member's own)
    over what `cargo tree -p member ARGS` builds: that member's features
    alone, not unified with the rest of the workspace's."""
    versions = {(p["name"], p["version"]): version(p.get("rust_version"))
                for p in meta["packages"]}
    tree = subprocess.run(
        ["cargo", "tree", "-p", member, *args, "-e", "normal,build", "--prefix", "none",
         "--locked", "--target", "x86_64-unknown-linux-gnu", "--format", "{p}"],
        check=True, capture_output=True, text=True).stdout
    built = {(line.split()[0], line.split()[1].lstrip("v"))
             for line in tree.splitlines() if line.strip()}
    stated = next(version(p.get("rust_version")) for p in meta["packages"]
                  if p["name"] == member and p["id"] in meta["workspace_members"])
    built = {b for b in built if b[0] != member}
    top = max((versions[b] for b in built), default=(0,))
    who = sorted(f"{n} {v}" for n, v in built if versions[(n, v)] == top)
    return top, who, stated


def main():
    base = metadata("--all-features")
    fusebox = next(p for p in base["packages"] if p["name"] == "fusebox")
    features = sorted(f for f in fusebox["features"] if f != "default")
    sets = [("no feature", ["--no-default-features"])]
    sets += [(f, ["--no-default-features", "--features", f]) for f in features]
    sets += [("all features", ["--all-features"])]
    failed = False
    for label, args in sets:
        top, who, stated = needs(base, "fusebox", *args)
        if label in FEATURE_NEEDS:
            stated = version(FEATURE_NEEDS[label])
            if top != stated:
                failed = True
                line += f"  but FEATURE_NEEDS (and the README) say {FEATURE_NEEDS[label]}"
        elif label == "all features":
            stated = max(version(v) for v in FEATURE_NEEDS.values())
        line = f"fusebox, {label}: needs {'.'.join(map(str, top))} ({', '.join(who[:3])})"
        if top > stated:
            failed = True
            line += f"  ABOVE rust-version {'.'.join(map(str, stated))}"
        print(line)
    members = [p for p in base["packages"]
               if p["id"] in base["workspace_members"] and p["name"] != "fusebox"]
    for member in members:
        top, who, stated = needs(base, member["name"], "--all-features")
        line = f"{member['name']}: needs {'.'.join(map(str, top))} ({', '.join(who[:3])})"
        if top > stated:
            failed = True
            line += f"  ABOVE rust-version {'.'.join(map(str, stated))}"
        print(line)
    if failed:
        sys.exit("a locked dependency needs a newer Rust than the stated rust-version")


if __name__ == "__main__":
    main()
