"""The README's usage example runs when pasted."""

import re
from pathlib import Path


def test_readme_usage_example_runs(capsys):
    text = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "DIVERGED" in out and "ubu x sms" in out
