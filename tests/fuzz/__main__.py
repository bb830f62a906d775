"""A long fuzz campaign: `python -m tests.fuzz --n 100000 --seed 1`
(`--kinds tensor,arrays,array_text` for array programs alone).

Generates N cases (tests/fuzz/gen.py), runs each in-process through main() in
a worker process, and reports counts: exit codes, hangs, internal errors
(each cause with a minimised repro), stdout on exit 2, wrong numbers. A
worker that does not answer within the time limit is killed and replaced;
its case counts as a hang. The same seed gives the same cases. Exit code 0
when nothing was found, 1 otherwise.
"""

import argparse
import collections
import multiprocessing
import random
import sys
import time

from tests.fuzz.check import Hang, execute, internal_error, problems
from tests.fuzz.gen import KINDS, hostile_case
from tests.helpers import Run

MEMORY = 4 << 30   # bytes of address space per worker: a blow-up is a MemoryError, not a dead machine


def case_for(seed, index, kinds=KINDS):
    return hostile_case(random.Random(f'{seed}:{index}'), kinds)


# ---- the worker ----

def _worker(conn, seed, limit, kinds):
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    while True:
        job = conn.recv()
        if job is None:
            return
        index, case = job
        case = case or case_for(seed, index, kinds)
        try:
            runs = execute(case, limit)
        except Hang:
            conn.send(('hang', None))
            continue
        # a tensor case's gradients are read whole from its JSON
        conn.send(('done', [(r.code, r.out[:100_000], r.err[-2000:]) for r in runs]))


class Worker:
    def __init__(self, seed, limit, kinds=KINDS):
        self.seed, self.limit, self.kinds = seed, limit, kinds
        self._start()

    def _start(self):
        self.conn, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(
            target=_worker, args=(child, self.seed, self.limit, self.kinds), daemon=True)
        self.process.start()

    def run(self, index, case=None):
        """('done', [(code, out, err)]) or ('hang', None); a stuck worker is replaced."""
        self.conn.send((index, case))
        if self.conn.poll(self.limit * 3 + 5):
            try:
                return self.conn.recv()
            except EOFError:   # the worker died (a signal, the memory cap in C code)
                self.process.join()
                self._start()
                return 'done', [(-1, '', f'worker died: exit {self.process.exitcode}')]
        self.process.kill()
        self.process.join()
        self._start()
        return 'hang', None

    def close(self):
        self.conn.send(None)
        self.process.join(5)


# ---- shrinking an internal error to a small repro ----

def _chunks_removed(data, size):
    for start in range(0, len(data), size):
        yield data[:start] + data[start + size:]


def shrink(worker, case, cause, budget=300):
    """A smaller case with the same internal error (delta debugging on argv and files)."""
    def still(candidate):
        nonlocal budget
        budget -= 1
        status, runs = worker.run(-1, candidate)
        return status == 'done' and any(internal_error(Run(*r)) == cause for r in runs)

    case = dict(case)
    if case.get('runs'):   # a numbers case: keep the failing command line alone
        case['argv'] = case['runs'][0]
        for argv in case['runs']:
            if still({**case, 'runs': None, 'argv': argv}):
                case['argv'] = argv
                break
        case['runs'] = None
    changed = True
    while changed and budget > 0:
        changed = False
        for i in range(len(case['argv']) - 1, 0, -1):
            trial = {**case, 'argv': case['argv'][:i] + case['argv'][i + 1:]}
            if budget > 0 and still(trial):
                case, changed = trial, True
        for name in list(case['files']) + (['<stdin>'] if 'stdin' in case else []):
            data = case['stdin'] if name == '<stdin>' else case['files'][name]
            size = max(1, len(data) // 2)
            while size >= 1 and budget > 0:
                for smaller in _chunks_removed(data, size):
                    trial = _with(case, name, smaller)
                    if budget > 0 and still(trial):
                        case, data, changed = trial, smaller, True
                        break
                else:
                    size //= 2
    return case


def _with(case, name, data):
    if name == '<stdin>':
        return {**case, 'stdin': data}
    return {**case, 'files': {**case['files'], name: data}}


def literal(data):
    """A Python expression for the bytes, long runs written as b'y' * 140000."""
    import re
    parts, at = [], 0
    for run in re.finditer(rb'(.)\1{19,}', data, flags=re.S):
        if run.start() > at:
            parts.append(repr(data[at:run.start()]))
        parts.append(f'{data[run.start():run.start() + 1]!r} * {run.end() - run.start()}')
        at = run.end()
    if at < len(data) or not parts:
        parts.append(repr(data[at:]))
    text = ' + '.join(parts)
    return text if len(text) < 2000 else text[:2000] + f' ... ({len(data)} bytes)'


def describe(case):
    lines = [f'    adgrad {" ".join(_quote(a) for a in case["argv"])}']
    for name, data in case['files'].items():
        if name in ' '.join(case['argv']) or name == 'prog.ad' and '-fprog.ad' in case['argv']:
            lines.append(f'    file {name}: {literal(data)}')
    if case.get('stdin') and '-' in case['argv']:
        lines.append(f'    stdin: {literal(case["stdin"])}')
    return '\n'.join(lines)


def _quote(arg):
    import shlex
    return shlex.quote(arg)


# ---- the campaign ----

def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.fuzz', description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, default=10_000, help='number of cases (default 10000)')
    parser.add_argument('--seed', default='0', help='campaign seed (any text; default 0)')
    parser.add_argument('--limit', type=float, default=5.0, help='seconds per command line')
    parser.add_argument('--repros', type=int, default=3, help='repros shrunk and shown per cause')
    parser.add_argument('--kinds', default=','.join(KINDS),
                        help=f'kinds of case, comma-separated (default {",".join(KINDS)})')
    args = parser.parse_args(argv)
    kinds = tuple(args.kinds.split(','))
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f'unknown kinds: {", ".join(sorted(unknown))}')

    started = time.monotonic()
    worker = Worker(args.seed, args.limit, kinds)
    codes, counts = collections.Counter(), collections.Counter()
    causes, hangs, other = collections.defaultdict(list), [], collections.defaultdict(list)
    for index in range(args.n):
        case = case_for(args.seed, index, kinds)
        counts[case['kind']] += 1
        status, raw = worker.run(index)
        if status == 'hang':
            hangs.append(index)
            continue
        runs = [Run(*r) for r in raw]
        codes.update(r.code for r in runs)
        for problem in problems(case, runs):
            if problem.startswith('exit 70: '):
                causes[problem[len('exit 70: '):]].append(index)
            else:
                other[problem.split(':')[0]].append((index, problem))
        if sys.stderr.isatty() and index % 500 == 499:
            print(f'\r{index + 1}/{args.n}', end='', file=sys.stderr, flush=True)
        elif index % 5000 == 4999:   # a long campaign in the background says how far it is
            print(f'{index + 1}/{args.n} cases, {sum(map(len, causes.values()))} internal errors',
                  file=sys.stderr, flush=True)

    print(f'adgrad fuzz campaign: {args.n} cases, seed {args.seed!r}, '
          f'{time.monotonic() - started:.0f} s, limit {args.limit:g} s per command line')
    print('cases by kind: ' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))
    print('exit codes:    ' + ', '.join(f'{k}: {v}' for k, v in sorted(codes.items())))
    print(f'internal errors (exit 70): {sum(map(len, causes.values()))} '
          f'in {len(causes)} distinct causes')
    print(f'hangs (over {args.limit:g} s): {len(hangs)}')
    for name in ('stdout on exit 2', 'wrong numbers', 'readers differ', 'traceback on stderr',
                 'not one error line', 'exit'):
        print(f'{name}: {len(other.get(name, []))}')
    for cause, indices in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f'\n--- exit 70, {len(indices)}x: {cause}')
        for index in indices[:args.repros]:
            small = shrink(worker, case_for(args.seed, index, kinds), cause)
            print(f'  case {index}, minimised:\n{describe(small)}')
    for index in hangs[:args.repros]:
        print(f'\n--- hang: case {index}\n{describe(case_for(args.seed, index, kinds))}')
    for name, items in other.items():
        for index, problem in items[:args.repros]:
            case = case_for(args.seed, index, kinds)
            runs = case.get('runs') or [case['argv']]
            print(f'\n--- {problem}: case {index}')
            for argv in runs:
                print(describe({**case, 'argv': argv}))
    worker.close()
    found = causes or hangs or other
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
