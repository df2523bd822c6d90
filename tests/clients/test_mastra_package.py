"""The Mastra scorer installs the way its README says, from a clone: `npm pack` (what `make
mastra-pack` runs) builds the package with its `prepare` script into a tarball, and a fresh npm
project installs that tarball beside `@mastra/core` and `zod` and uses the scorer. No server:
the scorer is run against a closed port, which must fail it with Mastra's ScorerRunError."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import MASTRA, node_env, project_lock

pytestmark = pytest.mark.slow  # npm pack and install: in make test, not in make test-fast

CONSUMER = """
import assert from 'node:assert/strict';
import { createServer } from 'node:net';

import { MastraScorer, ScorerRunError } from '@mastra/core/evals';
import { createEvalsiteRubricScorer, evalsiteFailure } from '@evalsite/mastra';

const listener = createServer();
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const { port } = listener.address();
await new Promise((resolve) => listener.close(resolve));

const scorer = createEvalsiteRubricScorer({
  url: `http://127.0.0.1:${port}`, apiKey: 'es_test', rubric: 'support-quality',
});
// One @mastra/core: the package uses the project's (its peer), not a copy of its own.
assert.ok(scorer instanceof MastraScorer, 'the scorer is not a MastraScorer of this project');
const error = await scorer.run({ input: 'Where is my refund?', output: 'Soon.' }).then(
  () => assert.fail('the scorer reported a result'),
  (e) => e,
);
assert.ok(error instanceof ScorerRunError, String(error?.stack ?? error));
assert.equal(evalsiteFailure(error)?.kind, 'unreachable');
console.log('ok', scorer.id);
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, cwd=cwd, env=node_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_packed_tarball_installs_into_a_fresh_project_and_scores(mastra_package, tmp_path):
    npm = mastra_package
    with project_lock(MASTRA):  # `npm pack` builds dist/ (the package's prepare script)
        packed = _run([npm, "pack", "--json", "--pack-destination", str(tmp_path)], MASTRA)
    [tarball] = json.loads(packed.stdout[packed.stdout.index("[") :])
    files = {f["path"] for f in tarball["files"]}
    assert {"package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts"} <= files
    assert not {f for f in files if f.startswith(("test/", "node_modules/"))}, sorted(files)

    lock = json.loads((MASTRA / "package-lock.json").read_text())["packages"]
    core, zod = (lock[f"node_modules/{name}"]["version"] for name in ("@mastra/core", "zod"))
    project = tmp_path / "consumer"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"private": True, "type": "module"}))
    tgz = str(tmp_path / tarball["filename"])
    _run(
        [npm, "install", "--no-audit", "--no-fund", "--prefer-offline", tgz,
         f"@mastra/core@{core}", f"zod@{zod}"],
        project,
    )  # fmt: skip
    (project / "check.mjs").write_text(CONSUMER)

    done = _run(["node", "check.mjs"], project)

    assert done.stdout.strip() == "ok evalsite-rubric-support-quality"
