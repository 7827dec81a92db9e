#!/usr/bin/env python3
"""The layers of docs/DESIGN.md, held by the includes: front ends (cli, gui) -> workflows -> engines
(trainer, analysis) -> core, with the figures (app/plot, app/export) beside the front ends, between them
and the workflows. Every `#include "..."` of a project file is checked against the layer it is in; an
include that reaches up or sideways (core including analysis, the trainer including analysis, the figures
including the GUI, ...) fails, naming the file, the line and what that layer may include.

The link graph (app/CMakeLists.txt) cannot hold this alone: every target shares the repository root as its
include root, so a header of any layer can be included from any other.

Usage: check_layers.py [REPO_ROOT]   (exit 0: every include keeps to its layer; 1: the list of those that
do not)
"""
import pathlib
import re
import sys

# Each layer: the directories it holds (first match wins, longest first) and what its files may include.
# A name ending in .hpp is one file, allowed on its own.
FIGURES = ["app/plot", "app/export"]
ENGINES = ["trainer", "analysis"]
LAYERS = {
    "core": ["core"],
    "analysis": ["analysis", "core"],
    "trainer": ["trainer", "core"],
    "app/workflows": ["app/workflows", *ENGINES, "core"],
    "app/plot": [*FIGURES, "app/workflows", "analysis", "core"],
    "app/export": [*FIGURES, "app/workflows", "analysis", "core"],
    # the CLI lists the GUI's tab names (app/gui/view_id, a library of its own) without the GUI
    "app/cli": ["app/cli", "app/gui/view_id.hpp", *FIGURES, "app/workflows", *ENGINES, "core"],
    "app/gui": ["app/gui", "app/cli", *FIGURES, "app/workflows", *ENGINES, "core"],
    # the executable: main.cpp and the plugin loader
    "app": ["app/cli", "app/gui_loader.hpp", "app/workflows", *ENGINES, "core"],
}
SOURCES = ("*.cpp", "*.hpp", "*.h", "*.cu", "*.cuh", "*.inl", "*.def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path: str) -> str | None:
    for layer in sorted(LAYERS, key=len, reverse=True):
        if path.startswith(layer + "/"):
            # "app" is the executable's own files, directly in app/: a new folder there is no layer yet
            return layer if layer != "app" or "/" not in path[len("app/"):] else None
    return None


def allowed(target: str, allowances: list[str]) -> bool:
    return any(target == a if a.endswith(".hpp") else target.startswith(a + "/") for a in allowances)


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    project = {p.name for p in root.iterdir() if p.is_dir()}
    problems, checked = [], 0
    for top in ("core", "analysis", "trainer", "app"):
        for pattern in SOURCES:
            for file in sorted((root / top).rglob(pattern)):
                rel = file.relative_to(root).as_posix()
                layer = layer_of(rel)
                if layer is None:
                    problems.append(f"{rel}: in no layer (add its directory to LAYERS in {__file__})")
                    continue
                for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1).split("/")[0] not in project:
                        continue  # a system header, or one next to the file
                    checked += 1
                    target = m.group(1)
                    if not allowed(target, LAYERS[layer]):
                        problems.append(f"{rel}:{number}: includes {target}, above or beside its layer "
                                        f"({layer} may include {', '.join(LAYERS[layer])})")
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} include(s) break the layers of docs/DESIGN.md")
        return 1
    print(f"{checked} project includes keep to their layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
