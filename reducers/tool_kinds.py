"""What kind of tool a name is (an editor, a container runtime, a
database ...), for two questions the fact rules cannot answer from a
sentence's shape alone:

- "I switched to Podman" with "user: uses docker" known: one container
  runtime replaces the other, the user does not now run both. A name of no
  known kind is left alone (a second tool fact, not a guess).
- "we moved to Kubernetes" is a tool switch, "we moved to Denver" a new
  home: a name of a known kind, or one shaped like code or a product
  ("PostgreSQL", "k8s"), is not a place.

Kinds are of tools people use one at a time; languages and libraries,
used side by side, are none."""
from __future__ import annotations

import re

_KINDS = {
    "editor": "vim neovim nvim emacs vscode code vs-code sublime atom helix nano zed cursor intellij pycharm webstorm "
              "goland rider clion xcode eclipse kakoune micro",
    "container runtime": "docker podman containerd colima orbstack rancher lima nerdctl",
    "orchestrator": "kubernetes k8s k3s nomad swarm openshift ecs",
    "database": "postgres postgresql mysql mariadb sqlite mongodb mongo cockroachdb dynamodb cassandra oracle "
                "mssql supabase planetscale neon",
    "shell": "bash zsh fish nushell powershell tcsh ksh",
    "terminal": "iterm iterm2 alacritty kitty wezterm ghostty hyper konsole warp tmux screen zellij",
    "browser": "chrome chromium firefox safari brave arc edge vivaldi opera",
    "os": "macos windows linux ubuntu fedora debian arch nixos manjaro mint",
    "js package manager": "npm yarn pnpm bun",
    "python env manager": "pip pipenv poetry uv conda pdm hatch rye",
    "code host": "github gitlab bitbucket gitea codeberg",
    "cloud": "aws gcp azure digitalocean linode hetzner vultr",
    "ci": "jenkins circleci travis buildkite drone",
    "hosting": "heroku vercel netlify render fly railway",
    "vcs": "git mercurial svn jujutsu",
    "iac": "terraform pulumi opentofu cloudformation ansible",
    "notes app": "notion obsidian evernote logseq roam bear",
    "chat app": "slack discord teams mattermost zulip",
    "issue tracker": "jira linear asana trello clickup youtrack",
    "build tool": "bazel buck pants gradle maven sbt cmake meson ninja",
}
_KIND_OF = {name: kind for kind, names in _KINDS.items() for name in names.split()}
# Tools used side by side (no kind to supersede by), still not places.
_SIDE_BY_SIDE = frozenset("""python java javascript typescript rust golang ruby kotlin swift elixir scala haskell
clojure php perl lua dart julia react vue angular svelte django flask fastapi rails spring laravel nextjs node
deno express pytest jest vitest mocha kafka rabbitmq nats redis elasticsearch graphql grpc""".split())
# Inner capitals ("PostgreSQL", "GitHub", "iTerm"), digits, a dot inside a
# word, slashes: how products and code are spelled. Towns have "St." and
# "Winston-Salem", and one-letter prefixes ("McAllen", "LaGrange").
_PRODUCT_SHAPE = re.compile(r"(?:^[a-z]+|[a-z]{2})[A-Z]|\d|\.\w|[_/+]")


def kind_of(name: str) -> str | None:
    """The kind of tool `name` is ("Podman" -> "container runtime"), None when unknown."""
    words = name.lower().split()
    if not words:
        return None
    return _KIND_OF.get(words[0]) or _KIND_OF.get("".join(words)) or _KIND_OF.get("-".join(words))


def tool_shaped(name: str) -> bool:
    """Whether `name` reads as a tool or product rather than a place."""
    return kind_of(name) is not None or name.lower() in _SIDE_BY_SIDE or \
        any(_PRODUCT_SHAPE.search(w) for w in name.split())
