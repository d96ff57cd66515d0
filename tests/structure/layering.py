#!/usr/bin/env python3
"""Checks the engine's layering: each folder of src/engine may include only folders at or below
its own level (data flows down, nothing reaches back up), and the tools only the public API
(include/nn) and their own code. Prints every offending #include; exit status 1 if any."""
import os
import re
import sys

# Bottom to top. A folder may include itself and everything listed before it, except that
# backend/ sits beside data/ and io/ rather than above them: kernels never see files.
ORDER = ['core', 'config', 'data', 'io', 'backend', 'distributed', 'layers', 'model', 'predict',
         'train', 'api', 'export', 'serve']
NOT_BELOW = {'backend': {'data', 'io'}, 'distributed': {'data', 'io'}}
# Public headers every engine folder may include: the error and log-sink types are defined once,
# in the public API (include/nn/), and core/error.h and core/log.h include them.
GROUND_FLOOR = {'nn/error.h', 'nn/log.h'}
# What each tool may include besides the C++ and system headers: the public API and its own
# code (src/tools/common/ and src/tools/<tool>/).
TOOL_ALLOWED = {'nn', 'common'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def engine_allowed(folder):
    level = ORDER.index(folder)
    return set(ORDER[:level + 1]) - NOT_BELOW.get(folder, set())


def main(root):
    bad = []
    engine = os.path.join(root, 'src', 'engine')
    for folder in ORDER:
        # api/ implements the public headers; export/ and serve/ sit on them.
        above_api = ORDER.index(folder) >= ORDER.index('api')
        allowed = engine_allowed(folder) | ({'nn'} if above_api else set())
        for dirpath, _, files in os.walk(os.path.join(engine, folder)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                text = open(path, encoding='utf-8').read()
                for inc in INCLUDE.findall(text):
                    top = inc.split('/')[0]
                    if '/' not in inc:
                        continue  # a sibling header included by its own name (CUDA helpers)
                    if inc in GROUND_FLOOR:
                        continue
                    if top not in allowed:
                        bad.append(f'{os.path.relpath(path, root)}: includes "{inc}", but '
                                   f'{folder}/ may include only {", ".join(sorted(allowed))}')
    if os.environ.get('NN_LAYERING_TOOLS', '1') == '1':
        tools = os.path.join(root, 'src', 'tools')
        for dirpath, _, files in os.walk(tools):
            tool = os.path.relpath(dirpath, tools).split('/')[0]
            for name in sorted(files):
                if not name.endswith(('.cpp', '.h')):
                    continue
                path = os.path.join(dirpath, name)
                for inc in INCLUDE.findall(open(path, encoding='utf-8').read()):
                    top = inc.split('/')[0]
                    if top not in TOOL_ALLOWED | {tool}:
                        bad.append(f'{os.path.relpath(path, root)}: includes "{inc}"; tools '
                                   'include only include/nn/, src/tools/common/ and their own '
                                   'folder')
    for line in bad:
        print(line)
    print(f'layering: {len(bad)} offending includes')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')))
