"""Side effects a restore cannot take back: one table, many members of each class."""

from __future__ import annotations

import pytest

from retrace.agent.side_effects import (
    CONTAINER,
    DATABASE,
    INSTALL,
    NETWORK,
    OUTSIDE,
    PUSH,
    REMOTE,
    SERVICE,
    command_of_label,
    is_shell_tool,
    side_effects,
)

WS = "/home/u/project"

CASES: list[tuple[str, list[str]]] = [
    # package installs outside the workspace
    ("pip install requests", [INSTALL]),
    ("pip3 install -U 'requests>=2'", [INSTALL]),
    ("python -m pip install -e .", [INSTALL]),
    ("python3.12 -m pip uninstall -y x", [INSTALL]),
    ("uv pip install x", [INSTALL]),
    ("sudo apt-get install -y jq", [INSTALL]),
    ("sudo -u root -E apt install jq", [INSTALL]),
    ("DEBIAN_FRONTEND=noninteractive apt-get -y install jq", [INSTALL]),
    ("npm i -g typescript", [INSTALL]),
    ("npm install --global typescript", [INSTALL]),
    ("yarn global add serve", [INSTALL]),
    ("brew install ripgrep", [INSTALL]),
    ("cargo install ripgrep", [INSTALL]),
    ("go install golang.org/x/tools/gopls@latest", [INSTALL]),
    ("gem install rails", [INSTALL]),
    ("pacman -S vim", [INSTALL]),
    # containers
    ("docker run --rm -p 80:80 nginx", [CONTAINER]),
    ("podman build -t x .", [CONTAINER]),
    ("docker compose up -d", [CONTAINER]),
    ("kubectl apply -f deploy.yaml", [CONTAINER]),
    # databases
    ("psql -c 'DROP TABLE users' app", [DATABASE]),
    ("mysql -u root < schema.sql", [DATABASE]),
    ("redis-cli FLUSHALL", [DATABASE]),
    # network writes
    ("curl -X POST https://api.example.com/x", [NETWORK]),
    ("curl -XDELETE https://api.example.com/x/1", [NETWORK]),
    ("curl --request=PUT https://e.com", [NETWORK]),
    ("curl -d 'a=1' https://e.com", [NETWORK]),
    ("curl --data-binary @f https://e.com", [NETWORK]),
    ("wget --post-data='a=1' https://e.com", [NETWORK]),
    ("http POST e.com a=1", [NETWORK]),
    # git push
    ("git push origin main", [PUSH]),
    ("git -C sub push --force", [PUSH]),
    ("git add . && git commit -m x && git push", [PUSH]),
    # remote copies
    ("scp build.tar user@host:/srv/", [REMOTE]),
    ("rsync -av dist/ deploy@example.com:/var/www/", [REMOTE]),
    ("ssh host 'rm -rf /tmp/x'", [REMOTE]),
    # writes outside the workspace
    ("echo hi > /etc/motd", [OUTSIDE]),
    ("echo 'export X=1' >> ~/.bashrc", [OUTSIDE]),
    ("cat <<EOF > /opt/conf\nkey: 1\nEOF", [OUTSIDE]),
    ("cp build/app /usr/local/bin/", [OUTSIDE]),
    ("echo x | sudo tee -a /etc/hosts", [OUTSIDE]),
    ("rm -rf /var/cache/app", [OUTSIDE]),
    ("dd if=img of=/dev/sdb", [OUTSIDE]),
    # services
    ("sudo systemctl restart nginx", [SERVICE]),
    # nested: substitutions and sh -c
    ("echo $(curl -X POST https://e.com)", [NETWORK]),
    ("bash -c 'pip install x && docker run y'", [INSTALL, CONTAINER]),
    ("nohup docker run y &", [CONTAINER]),
    ("timeout 10 psql app", [DATABASE]),
    # several in one chain
    ("pip install x; git push", [INSTALL, PUSH]),
    # more members
    ("pip3.11 install x", [INSTALL]),
    ("sudo -- pip install x", [INSTALL]),
    ("env -i PATH=/usr/bin pip install x", [INSTALL]),
    ("curl -sSX POST https://e.com", [NETWORK]),
    ("curl -sS -X PATCH https://e.com", [NETWORK]),
    ("sed -i 's/a/b/' /etc/hosts", [OUTSIDE]),
    ("mv /etc/app.conf backup.conf", [OUTSIDE]),
    ("echo x 2>> /var/log/app.log", [OUTSIDE]),
    ("echo x >>~/.profile", [OUTSIDE]),
    ("docker compose ps", []),
    ("psql --version", []),
    ("sed -i 's/a/b/' config.txt", []),
    ("curl -sS -X GET https://e.com", []),
    # nothing outside the workspace
    ("npm install", []),
    ("npm i lodash", []),
    ("pip --version", []),
    ("pip list", []),
    ("docker ps", []),
    ("docker images", []),
    ("kubectl get pods", []),
    ("curl https://example.com", []),
    ("curl -o out.json https://example.com", []),
    ("git commit -m 'curl -X POST x'", []),
    ("git status && git log", []),
    ("echo 'pip install x'", []),
    ("echo hi > out.txt 2>&1", []),
    ("echo hi > /dev/null", []),
    (f"echo hi > {WS}/notes.txt", []),
    ("cp a.txt b.txt", []),
    ("mkdir -p build/x", []),
    ("scp a b", []),
    ("rsync -a src/ dst/", []),
    ("ls /etc", []),
    ("cat /etc/hosts", []),
    ("", []),
    ("'unterminated", []),
]


@pytest.mark.parametrize(("command", "kinds"), CASES)
def test_side_effects_table(command: str, kinds: list[str]) -> None:
    assert [e.kind for e in side_effects(command, WS)] == kinds


def test_the_piece_doing_it_is_named() -> None:
    (effect,) = side_effects("npm test && pip install requests > log.txt", WS)
    assert effect.command == "pip install requests > log.txt"


def test_outside_without_workspace_means_any_absolute_path() -> None:
    assert [e.kind for e in side_effects("echo x > /home/u/project/a")] == [OUTSIDE]


def test_depth_and_size_are_bounded() -> None:
    nested = "pip install x"
    for _ in range(10):
        nested = f"bash -c {nested!r}"
    assert side_effects(nested, WS) == []  # deeper than MAX_DEPTH: not followed, no crash
    assert side_effects("a" * 100_000 + " ; pip install x", WS) == []


def test_shell_tools_and_labels() -> None:
    assert is_shell_tool("run_command") and is_shell_tool("Bash") and is_shell_tool("run_shell_command")
    assert not is_shell_tool("write_file") and not is_shell_tool(None)
    assert command_of_label("run_command", "run_command: pip install x") == "pip install x"
    assert command_of_label("Bash", "pip install x") == "pip install x"
