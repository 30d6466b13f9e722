"""A small POSIX-shell lexer for the commands agents run through Hermes's ``terminal`` tool:
enough of the grammar to find which files a command writes, never to run anything.

It knows words and their quoting (single quotes, double quotes, backslashes, ``$'…'``),
command and parameter substitutions (``$(…)``, backquotes, ``${…}``: a word holding one is
*dynamic*, its value unknown until run), control operators (``&&``, ``||``, ``;``, ``|``, ``&``,
newlines, parentheses and braces), comments, line continuations, redirections with or without a
file descriptor (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``2>``, ``<``, ``>&2``, ``<<<``) and
here-documents (``<<EOF`` / ``<<-EOF``, quoted delimiters), whose bodies are read as text and
never as commands.

Commands are split into simple commands (words and redirections), each tagged with the
operator that follows it, so a caller can follow ``cd`` and pipelines in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")")
REDIRECTS = ("&>>", "<<<", "<<-", ">>", ">|", ">&", "&>", "<<", "<&", "<>", ">", "<")
GLOB = set("*?[")
SEPARATORS = set(" \t")
SPECIAL = set("&|;()<>")
MAX_DEPTH = 4  # nested substitutions deeper than this are read as plain text


@dataclass
class Word:
    text: str  # after quote removal (substitutions kept as written)
    dynamic: bool = False  # holds an expansion or an unquoted glob: its value is unknown
    quoted: bool = False  # some part was quoted


@dataclass
class Redirect:
    op: str  # '>', '>>', '>|', '&>', '&>>', '<', '<<', '<<-', '<<<', '>&', '<&', '<>'
    fd: int | None  # the descriptor written before it (2 in 2>), None when not given
    target: Word
    body: str | None = None  # a here-document's text
    body_literal: bool = True  # no expansion happens in the body (quoted delimiter, or none)


@dataclass
class Simple:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    after: str = ";"  # the operator that follows: ';', '&&', '||', '|', '&', '(' or ')'


class _Lexer:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.n = len(text)
        self.pending: list[Redirect] = []  # here-documents whose bodies follow the next newline

    # -- words ----------------------------------------------------------------------------

    def _substitution(self, close: str) -> str:
        """From after ``$(`` or a backquote to its end (quotes and nesting respected)."""
        start, depth = self.i, 1
        while self.i < self.n:
            c = self.s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if close == "`":
                if c == "`":
                    self.i += 1
                    return self.s[start : self.i - 1]
                self.i += 1
                continue
            if c == "'":
                end = self.s.find("'", self.i + 1)
                self.i = self.n if end < 0 else end + 1
                continue
            if c == '"':
                self._double()
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start : self.i - 1]
            self.i += 1
        return self.s[start:]

    def _double(self) -> tuple[str, bool]:
        """A double-quoted part from its opening quote: (text, dynamic)."""
        self.i += 1
        out, dynamic = [], False
        while self.i < self.n:
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out), dynamic
            if c == "\\" and self.i + 1 < self.n:
                nxt = self.s[self.i + 1]
                if nxt in '"\\$`':
                    out.append(nxt)
                    self.i += 2
                    continue
                if nxt == "\n":
                    self.i += 2
                    continue
                out.append(c)
                self.i += 1
                continue
            if self._expansion(c, out):
                dynamic = True
                continue
            out.append(c)
            self.i += 1
        return "".join(out), dynamic

    def _expansion(self, c: str, out: list[str]) -> bool:
        """A ``$`` expansion or a backquoted substitution at the cursor, appended to ``out``
        (the cursor past it); False, nothing read, when ``c`` starts neither."""
        if c == "$" and self.i + 1 < self.n:
            after = self.s[self.i + 1]
            if after.isalnum() or after in "{(_@*#?$!-":
                out.append(self._dollar())
                return True
        if c == "`":
            self.i += 1
            out.append("`" + self._substitution("`") + "`")
            return True
        return False

    def _dollar(self) -> str:
        """``$…`` from the dollar sign: returns it as written."""
        start = self.i
        self.i += 1
        c = self.s[self.i] if self.i < self.n else ""
        if c == "(":
            self.i += 1
            self._substitution(")")
        elif c == "{":
            end = self.s.find("}", self.i)
            self.i = self.n if end < 0 else end + 1
        elif c.isalpha() or c == "_":
            while self.i < self.n and (self.s[self.i].isalnum() or self.s[self.i] == "_"):
                self.i += 1
        elif c:
            self.i += 1
        return self.s[start : self.i]

    def _ansi_c(self) -> str:
        """``$'…'`` from its quote: backslash escapes of ANSI-C quoting."""
        self.i += 1
        out = []
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
        while self.i < self.n:
            c = self.s[self.i]
            if c == "'":
                self.i += 1
                break
            if c == "\\" and self.i + 1 < self.n:
                out.append(escapes.get(self.s[self.i + 1], "\\" + self.s[self.i + 1]))
                self.i += 2
                continue
            out.append(c)
            self.i += 1
        return "".join(out)

    def word(self) -> Word:
        out: list[str] = []
        dynamic = quoted = False
        while self.i < self.n:
            c = self.s[self.i]
            if c in SEPARATORS or c == "\n" or c in SPECIAL:
                break
            if c == "\\":
                if self.i + 1 < self.n and self.s[self.i + 1] == "\n":
                    self.i += 2  # a line continuation
                    continue
                if self.i + 1 < self.n:
                    out.append(self.s[self.i + 1])
                    quoted = True
                self.i += 2
                continue
            if c == "'":
                end = self.s.find("'", self.i + 1)
                end = self.n if end < 0 else end
                out.append(self.s[self.i + 1 : end])
                self.i = end + 1
                quoted = True
                continue
            if c == '"':
                text, dyn = self._double()
                out.append(text)
                dynamic |= dyn
                quoted = True
                continue
            if c == "$" and self.i + 1 < self.n and self.s[self.i + 1] == "'":
                self.i += 1
                out.append(self._ansi_c())
                quoted = True
                continue
            if self._expansion(c, out):
                dynamic = True
                continue
            if c in GLOB:
                dynamic = True
            out.append(c)
            self.i += 1
        return Word("".join(out), dynamic, quoted)

    # -- here-documents ----------------------------------------------------------------

    def _bodies(self) -> None:
        """After a newline: the bodies of the here-documents started on that line."""
        for r in self.pending:
            delim, strip = r.target.text, r.op == "<<-"
            lines = []
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                line = self.s[self.i : end if end >= 0 else self.n]
                self.i = self.n if end < 0 else end + 1
                if strip:
                    line = line.lstrip("\t")
                if line == delim:
                    break
                lines.append(line + "\n")
            body = "".join(lines)
            r.body = body
            r.body_literal = r.target.quoted or not any(ch in body for ch in "$`\\")
        self.pending = []

    # -- the token stream ------------------------------------------------------------------

    def simple_commands(self) -> list[Simple]:
        out: list[Simple] = []
        cur = Simple()

        def close(op: str) -> None:
            nonlocal cur
            if cur.words or cur.redirects or op in ("(", ")"):
                cur.after = op
                out.append(cur)
            cur = Simple()

        while self.i < self.n:
            c = self.s[self.i]
            if c in SEPARATORS:
                self.i += 1
                continue
            if c == "\\" and self.s.startswith("\\\n", self.i):
                self.i += 2
                continue
            if c == "#" and (self.i == 0 or self.s[self.i - 1] in " \t\n;&|()"):
                end = self.s.find("\n", self.i)
                self.i = self.n if end < 0 else end
                continue
            if c == "\n":
                self.i += 1
                close(";")
                self._bodies()
                continue
            fd = None
            j = self.i
            while j < self.n and self.s[j].isdigit():
                j += 1
            if j > self.i and j < self.n and self.s[j] in "<>":
                fd = int(self.s[self.i : j][:6])
                self.i = j
                c = self.s[j]
            redirect = next((r for r in REDIRECTS if self.s.startswith(r, self.i)), None)
            if redirect is not None:
                self.i += len(redirect)
                while self.i < self.n and self.s[self.i] in SEPARATORS:
                    self.i += 1
                if self.s.startswith("(", self.i) and redirect in (">", "<"):
                    # a process substitution, >(…) or <(…): no file
                    self.i += 1
                    target = Word("(" + self._substitution(")") + ")", dynamic=True)
                else:
                    target = self.word()
                r = Redirect(redirect, fd, target)
                if redirect in ("<<", "<<-"):
                    self.pending.append(r)
                cur.redirects.append(r)
                continue
            op = next((o for o in OPERATORS if self.s.startswith(o, self.i)), None)
            if op is not None:
                self.i += len(op)
                close(op)
                continue
            w = self.word()
            if not w.text and not w.quoted:
                self.i += 1  # a character the word reader does not take: step over it
                continue
            if w.text in ("{", "}") and not w.quoted:
                close(";")
                continue
            cur.words.append(w)
        close(";")
        self._bodies()  # a here-document on the last line without its body
        return out


def simple_commands(text: str) -> list[Simple]:
    """The simple commands of a shell command line, in order."""
    return _Lexer(text).simple_commands()
