"""The UI's admin token from a file or the environment (issue 40, item 6): so that it is
never seen in the process list, ``ui.admin.token.file`` (checked as the cluster secret's
file is) and ``$SPARKSTORM_UI_ADMIN_TOKEN`` stand beside ``-c ui.admin.token``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from topology.errors import ConfigError
from topology.ui.auth import TOKEN_ENV, UiSettings

pytestmark = pytest.mark.timeout(30)

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")

TOKEN = "a-token-of-the-file-0123456789"
ENV_TOKEN = "a-token-of-the-environment-42"
CONF_TOKEN = "a-token-given-with-dash-c-0000"


def token_file(tmp_path: Path, text: str = TOKEN, mode: int = 0o600) -> str:
    path = tmp_path / "ui-token"
    path.write_text(text + "\nignored second line\n")
    path.chmod(mode)
    return str(path)


def settings(conf: dict[str, object], env: dict[str, str] | None = None) -> UiSettings:
    return UiSettings.from_conf(conf, environ=env or {})


def test_the_token_is_the_conf_s_then_the_file_s_then_the_environment_s(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    env = {TOKEN_ENV: ENV_TOKEN}
    assert settings({}).admin_token is None
    assert settings({}, env).admin_token == ENV_TOKEN
    assert settings({"ui.admin.token.file": path}, env).admin_token == TOKEN
    both = {"ui.admin.token": CONF_TOKEN, "ui.admin.token.file": path}
    assert settings(both, env).admin_token == CONF_TOKEN
    assert settings({}, {TOKEN_ENV: "  "}).admin_token is None  # blank: none


def test_a_token_file_under_home_is_read_as_docs_ui_md_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-c ui.admin.token.file=~/.sparkstorm/ui-token`` (docs/UI.md): no shell expands
    that ``~`` (what precedes ``=`` is not a variable name), so sparkstorm does."""
    monkeypatch.setenv("HOME", str(tmp_path))
    token_file(tmp_path)
    assert settings({"ui.admin.token.file": "~/ui-token"}).admin_token == TOKEN


@posix_only
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_token_file_open_to_others_is_refused_naming_the_fix(tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, mode=mode)
    with pytest.raises(ConfigError) as refused:
        settings({"ui.admin.token.file": path})
    message = str(refused.value)
    assert message.startswith(f"ui.admin.token.file: {path} is open to its group or others")
    assert f"the token must be readable by its owner only: run chmod 600 {path}" in message
    assert TOKEN not in message


def test_a_bad_token_file_or_variable_is_one_line_naming_it(tmp_path: Path) -> None:
    cases = {
        "ui.admin.token.file: the token in": {"ui.admin.token.file": token_file(tmp_path, "short")},
        "ui.admin.token.file: cannot read": {"ui.admin.token.file": str(tmp_path / "none")},
        "ui.admin.token.file: ": {"ui.admin.token.file": str(tmp_path)},  # a directory
    }
    for start, conf in cases.items():
        with pytest.raises(ConfigError, match=f"^{start}"):
            settings(conf)
    with pytest.raises(ConfigError, match=rf"^\${TOKEN_ENV}: .* at least 16 characters"):
        settings({}, {TOKEN_ENV: "short"})


@posix_only
def test_a_fifo_as_token_file_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(ConfigError, match=f"ui.admin.token.file: {fifo} is not a regular file"):
        settings({"ui.admin.token.file": str(fifo)})


def test_help_says_how_to_give_the_token_without_dash_c() -> None:
    for command in ("ui", "local"):
        text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
        assert "ui.admin.token.file" in text and "SPARKSTORM_UI_ADMIN_TOKEN" in text, command
