"""Which files a ``terminal`` command writes or changes, read from the command's text alone.

The forms recognised (``FORMS``, also listed on the Files page and in the README):

* output redirection: ``> file``, ``>| file``, ``&> file``, ``2> file`` (the file is written
  whole), ``>> file``, ``&>> file`` (appended to); the text written is known when the command
  says it literally: ``echo`` / ``printf`` of literal words, ``cat`` of a here-document or a
  here-string (``cat > f <<'EOF' … EOF``), or a literal producer piped into ``cat`` or ``tee``;
* ``tee [-a] files…`` (written, or appended to with ``-a``);
* ``sed -i`` / ``sed -i.bak`` / ``sed --in-place`` / BSD ``sed -i ''`` (changed in place; the
  script is kept as what was applied);
* ``mv``, ``cp`` (also ``-t DIR``), ``rm`` (any options); ``git mv`` and ``git rm`` (not
  ``--cached``);
* ``curl -o file`` / ``--output``, ``wget -O file`` / ``--output-document`` (written).

Commands are followed in order: ``cd DIR`` (and ``pushd``) changes the folder later relative
paths are read against, a subshell's ``cd`` ends with it, ``bash -c '…'`` (and ``sh``/``zsh``)
is read as a command of its own, ``sudo``/``env``/``nohup``/``time``/``timeout``/``nice``/
``command``/``exec`` and ``NAME=value`` prefixes are looked through. A path that holds a
variable, a command substitution or a glob is left out (its value is known only when run); so
is everything inside a here-document's body, which is text, not commands.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from webui.hermes.paths import resolve
from webui.hermes.shell_lexer import Redirect, Simple, Word, simple_commands

FORMS = (
    ("> file, >| file, &> file, 2> file", "the file written whole"),
    (">> file, &>> file", "appended to"),
    ("cat > file <<'EOF' … EOF, echo / printf … > file", "written, with the text it wrote"),
    ("tee file, tee -a file", "written / appended to (with the piped text when it is literal)"),
    ("sed -i, sed -i.bak, sed --in-place, sed -i ''", "changed in place (the sed script kept)"),
    ("mv SRC… DEST, mv -t DIR SRC…, git mv", "moved (both paths get an entry)"),
    ("cp SRC… DEST, cp -t DIR SRC…", "copied to"),
    ("rm …, git rm … (not --cached)", "removed"),
    ("curl -o file, wget -O file", "written (downloaded)"),
    ("cd DIR, pushd DIR, ( … ), bash -c '…'", "followed: later relative paths resolve there"),
)

MAX_COMMAND_CHARS = 262_144  # longer commands are read up to here
MAX_NESTING = 3  # bash -c inside bash -c …
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
KEYWORDS = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}"}
# Wrappers that run the rest of the words as a command, and their options that take a value.
WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "env": {"-u", "-C", "-S"},
    "nohup": set(),
    "time": {"-f", "-o"},
    "command": set(),
    "exec": {"-a"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"},
    "timeout": {"-s", "-k"},
}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}


@dataclass(frozen=True)
class ShellEdit:
    path: str
    action: str  # write / append / edit / delete / move_in / move_out / copy_in
    form: str  # '>', '>>', 'tee', 'tee -a', 'sed -i', 'mv', 'cp', 'rm', 'git mv', …
    content: str | None = None  # the text written or appended, when the command says it
    detail: str | None = None  # sed: the script applied
    other: str | None = None  # mv / cp: the path at the other end


def _texts(words: list[Word]) -> list[str]:
    return [w.text for w in words]


def _command(words: list[Word]) -> list[Word]:
    """The words from the command's own name on: keywords, assignments and wrappers gone."""
    i = 0
    while i < len(words):
        w = words[i]
        if not w.quoted and (w.text in KEYWORDS or ASSIGNMENT.match(w.text)):
            i += 1
            continue
        name = posixpath.basename(w.text)
        if name in WRAPPERS and not w.quoted:
            takes = WRAPPERS[name]
            i += 1
            if name == "timeout":  # timeout [opts] DURATION command
                while i < len(words) and words[i].text.startswith("-"):
                    i += 2 if words[i].text in takes else 1
                i += 1
                continue
            while i < len(words) and words[i].text.startswith("-") and words[i].text != "-":
                i += 2 if words[i].text in takes else 1
            if name == "nice" and i < len(words) and re.fullmatch(r"-?\d+", words[i].text):
                i += 1
            continue
        return words[i:]
    return []


def _echo(args: list[Word]) -> str | None:
    newline, escapes = True, False
    rest = list(args)
    while rest and re.fullmatch(r"-[neE]+", rest[0].text) and not rest[0].quoted:
        flags = rest.pop(0).text
        newline = newline and "n" not in flags
        escapes = "e" in flags
    if any(w.dynamic for w in rest):
        return None
    text = " ".join(_texts(rest))
    if escapes and "\\" in text:
        return None
    return text + ("\n" if newline else "")


_PRINTF_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r"}


def _printf(args: list[Word]) -> str | None:
    if not args or any(w.dynamic for w in args):
        return None
    fmt, rest = args[0].text, _texts(args[1:])
    if fmt in ("%s\\n", "%s\n") and rest:
        return "".join(a + "\n" for a in rest)
    if fmt == "%s" and rest:
        return "".join(rest)
    if "%" in fmt or rest:
        return None
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "\\" and i + 1 < len(fmt):
            if fmt[i + 1] not in _PRINTF_ESCAPES:
                return None
            out.append(_PRINTF_ESCAPES[fmt[i + 1]])
            i += 2
            continue
        out.append(fmt[i])
        i += 1
    return "".join(out)


def _stdin_text(cmd: Simple, piped: str | None) -> str | None:
    """What the command reads on its standard input, when it is literal: a here-document, a
    here-string or a literal producer piped in."""
    for r in reversed(cmd.redirects):
        if r.op in ("<<", "<<-") and (r.fd in (None, 0)):
            return r.body if r.body_literal else None
        if r.op == "<<<" and r.fd in (None, 0):
            return None if r.target.dynamic else r.target.text + "\n"
        if r.op == "<" and r.fd in (None, 0):
            return None
    return piped


def _stdout_text(name: str, args: list[Word], cmd: Simple, piped: str | None) -> str | None:
    """What the command writes to its standard output, when it says it literally."""
    if name == "echo":
        return _echo(args)
    if name == "printf":
        return _printf(args)
    if name == "cat" and all(w.text == "-" for w in args):
        return _stdin_text(cmd, piped)
    return None


def _split_options(args: list[Word], with_value: set[str]) -> tuple[list[Word], dict[str, str]]:
    """Positional words and the options given (``-t DIR``, ``--target-directory=DIR``)."""
    positional: list[Word] = []
    options: dict[str, str] = {}
    i, ended = 0, False
    while i < len(args):
        w = args[i]
        t = w.text
        if ended or not t.startswith("-") or t == "-":
            positional.append(w)
        elif t == "--":
            ended = True
        elif t.startswith("--"):
            key, eq, value = t.partition("=")
            if not eq and key in with_value and i + 1 < len(args):
                value = args[i + 1].text
                i += 1
            options[key] = value
        elif t[:2] in with_value:
            if len(t) > 2:
                options[t[:2]] = t[2:]
            elif i + 1 < len(args):
                options[t[:2]] = args[i + 1].text
                i += 1
        else:
            for ch in t[1:]:
                options["-" + ch] = ""
        i += 1
    return positional, options


class _Reader:
    def __init__(self, cwd: str | None):
        self.cwd = cwd
        self.stack: list[str | None] = []
        self.out: list[ShellEdit] = []

    def path(self, w: Word) -> str | None:
        if w.dynamic or not w.text:
            return None
        return resolve(self.cwd, w.text)

    def add(self, w: Word, action: str, form: str, **extra) -> None:
        p = self.path(w)
        if p is not None:
            self.out.append(ShellEdit(p, action, form, **extra))

    # -- one simple command --------------------------------------------------------------

    def command(self, cmd: Simple, piped: str | None, depth: int) -> str | None:
        """Reads one simple command; returns what it writes to a pipe, when literal."""
        words = _command(cmd.words)
        name = posixpath.basename(words[0].text) if words and not words[0].dynamic else ""
        args = words[1:]
        produced = _stdout_text(name, args, cmd, piped) if name else None
        self.redirects(cmd.redirects, produced)
        handler = getattr(self, "_" + name.replace("-", "_"), None) if name else None
        if name in SHELLS:
            self.shell(args, depth)
        elif handler is not None and name in HANDLED:
            handler(args, cmd, piped)
        stdout_to_file = any(
            r.op in (">", ">|", "&>", ">>", "&>>") and r.fd in (None, 1) for r in cmd.redirects
        )
        return None if stdout_to_file else produced

    def redirects(self, redirects: list[Redirect], produced: str | None) -> None:
        outs = [
            r
            for r in redirects
            if r.op in (">", ">|", "&>", ">>", "&>>")
            or (r.op == ">&" and not re.fullmatch(r"\d*-?", r.target.text))
        ]
        last_stdout = max((i for i, r in enumerate(outs) if r.fd in (None, 1)), default=None)
        for i, r in enumerate(outs):
            append = r.op in (">>", "&>>")
            form = r.op if r.fd in (None, 1) else f"{r.fd}{r.op}"
            if r.op == ">&":
                form = "&>"
            text = produced if i == last_stdout and r.fd in (None, 1) else None
            self.add(r.target, "append" if append else "write", form, content=text)

    def shell(self, args: list[Word], depth: int) -> None:
        """``bash -c 'script'``: the script read as commands of their own."""
        for i, w in enumerate(args):
            if (
                w.text.startswith("-")
                and not w.quoted
                and "c" in w.text[1:]
                and not w.text.startswith("--")
            ):
                if i + 1 < len(args) and not args[i + 1].dynamic and depth < MAX_NESTING:
                    inner = _Reader(self.cwd)
                    inner.run(args[i + 1].text, depth + 1)
                    self.out.extend(inner.out)
                return
            if not w.text.startswith("-"):
                return  # a script file: not read

    # -- the commands that change files ------------------------------------------------------

    def _cd(self, args, cmd, piped) -> None:
        words = [w for w in args if not (w.text.startswith("-") and w.text != "-" and not w.quoted)]
        if not words:
            self.cwd = "~"
        elif words[0].dynamic or words[0].text == "-":
            self.cwd = None
        else:
            self.cwd = resolve(self.cwd, words[0].text) or self.cwd

    _pushd = _cd

    def _popd(self, args, cmd, piped) -> None:
        self.cwd = None

    def _tee(self, args, cmd, piped) -> None:
        files, options = _split_options(args, {"--output-error"})
        append = "-a" in options or "--append" in options
        text = _stdin_text(cmd, piped)
        for w in files:
            self.add(
                w, "append" if append else "write", "tee -a" if append else "tee", content=text
            )

    def _sed(self, args, cmd, piped) -> None:
        in_place, scripts, positional = False, [], []
        i, ended = 0, False
        while i < len(args):
            w, t = args[i], args[i].text
            if ended or not t.startswith("-") or t == "-":
                positional.append(w)
            elif t == "--":
                ended = True
            elif t.startswith("--"):
                key, eq, value = t.partition("=")
                if key == "--in-place":
                    in_place = True
                elif key in ("--expression", "--file"):
                    if not eq and i + 1 < len(args):
                        value, i = args[i + 1].text, i + 1
                    scripts.append(value if key == "--expression" else f"(script file {value})")
                elif key == "--line-length" and not eq:
                    i += 1
            else:
                k = 1
                while k < len(t):
                    ch = t[k]
                    if ch == "i":
                        in_place = True
                        # BSD sed: -i takes its suffix as the next word, often ''
                        if (
                            k == len(t) - 1
                            and i + 1 < len(args)
                            and args[i + 1].text == ""
                            and args[i + 1].quoted
                        ):
                            i += 1
                        break
                    if ch in "ef":
                        value = t[k + 1 :]
                        if not value and i + 1 < len(args):
                            value, i = args[i + 1].text, i + 1
                        scripts.append(value if ch == "e" else f"(script file {value})")
                        break
                    if ch == "l":
                        if k == len(t) - 1:
                            i += 1
                        break
                    k += 1
            i += 1
        if not in_place:
            return
        if not scripts and positional:
            scripts.append(positional.pop(0).text)
        for w in positional:
            self.add(w, "edit", "sed -i", detail="\n".join(scripts) or None)

    def _moves(self, args: list[Word], form: str, copy: bool) -> None:
        positional, options = _split_options(
            args, {"-t", "--target-directory", "-S", "--suffix", "--backup", "--sparse"}
        )
        target_dir = options.get("-t") or options.get("--target-directory")
        if target_dir is not None:
            dest, sources, into = Word(target_dir), positional, True
        elif len(positional) >= 2:
            dest, sources = positional[-1], positional[:-1]
            into = len(sources) > 1 or dest.text.endswith("/") or dest.text in (".", "..")
        else:
            return
        for src in sources:
            if src.dynamic or dest.dynamic:
                continue
            to = (
                Word(posixpath.join(dest.text, posixpath.basename(src.text.rstrip("/"))))
                if into
                else dest
            )
            src_path, dest_path = self.path(src), self.path(to)
            if dest_path is None:
                continue
            self.out.append(
                ShellEdit(dest_path, "copy_in" if copy else "move_in", form, other=src_path)
            )
            if not copy and src_path is not None:
                self.out.append(ShellEdit(src_path, "move_out", form, other=dest_path))

    def _mv(self, args, cmd, piped) -> None:
        self._moves(args, "mv", copy=False)

    def _cp(self, args, cmd, piped) -> None:
        self._moves(args, "cp", copy=True)

    def _rm(self, args, cmd, piped, form: str = "rm") -> None:
        positional, _ = _split_options(args, set())
        for w in positional:
            self.add(w, "delete", form)

    def _git(self, args, cmd, piped) -> None:
        saved, i = self.cwd, 0
        while i < len(args) and args[i].text.startswith("-"):
            if args[i].text == "-C" and i + 1 < len(args):
                if args[i + 1].dynamic:
                    return
                self.cwd = resolve(self.cwd, args[i + 1].text)
                i += 1
            elif args[i].text in ("-c", "--git-dir", "--work-tree", "--namespace"):
                i += 1
            i += 1
        sub, rest = (args[i].text, args[i + 1 :]) if i < len(args) else ("", [])
        if sub == "mv":
            self._moves(rest, "git mv", copy=False)
        elif sub == "rm" and not any(w.text == "--cached" for w in rest):
            self._rm(rest, cmd, piped, form="git rm")
        self.cwd = saved

    def _download(self, args: list[Word], short: str, long: str, form: str) -> None:
        _, options = _split_options(args, {short, long})
        target = options.get(short, options.get(long))
        if target and target != "-":
            self.add(Word(target), "write", form)

    def _curl(self, args, cmd, piped) -> None:
        self._download(args, "-o", "--output", "curl -o")

    def _wget(self, args, cmd, piped) -> None:
        self._download(args, "-O", "--output-document", "wget -O")

    # -- the whole command line ------------------------------------------------------------

    def run(self, command: str, depth: int = 0) -> None:
        piped: str | None = None
        for cmd in simple_commands(command[:MAX_COMMAND_CHARS]):
            if cmd.words or cmd.redirects:
                produced = self.command(cmd, piped, depth)
                piped = produced if cmd.after in ("|", "|&") else None
            if cmd.after == "(":
                self.stack.append(self.cwd)
            elif cmd.after == ")" and self.stack:
                self.cwd = self.stack.pop()


HANDLED = {"cd", "pushd", "popd", "tee", "sed", "gsed", "mv", "cp", "rm", "git", "curl", "wget"}
_Reader._gsed = _Reader._sed  # type: ignore[attr-defined]


# A command without any of these cannot write a file by a recognised form: not parsed at all
# (most commands agents run: ls, cat, grep, pytest, git status …).
MAY_WRITE = re.compile(r">|\b(?:g?sed|tee|mv|cp|rm|curl|wget|git)\b")


def shell_edits(command: str | None, cwd: str | None = None) -> list[ShellEdit]:
    """The files ``command`` writes or changes, in order, resolved against ``cwd`` (the
    terminal's ``workdir``, else the session's folder; None when not known: relative paths
    then stay relative)."""
    if not isinstance(command, str) or not MAY_WRITE.search(command):
        return []
    reader = _Reader(cwd)
    reader.run(command)
    return reader.out
