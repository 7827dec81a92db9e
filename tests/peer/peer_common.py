"""What every peer check shares: its command line (the sharelens binary, the fixture generator, a work
directory made fresh), the fixtures written by make_fixtures, and failures collected by check() and
turned into the exit status by finish()."""
import argparse
import os
import shutil
import subprocess

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        if len(FAILURES) <= 30:
            print("FAIL:", message)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--make-fixtures", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    return args


def make_fixtures(args):
    """The fixture checkpoint directories (one per family and variant) under WORKDIR/fixtures."""
    listed = subprocess.run([args.make_fixtures, os.path.join(args.workdir, "fixtures")], check=True,
                            capture_output=True, text=True)
    return listed.stdout.split()


def finish(success):
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(success)
    return 0
