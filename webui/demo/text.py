"""Text for one session: user questions, assistant answers in Markdown, tool calls and
results, reasoning, CJK, emoji, the XSS corpus — all from the session's own random stream."""

from __future__ import annotations

import json
import random

from webui.demo.corpus import (
    _CITIES,
    _CJK_SENTENCES,
    _CJK_TOOLCALL_TEXT,
    _CODE,
    _CRON_PROMPTS,
    _CRON_SYSTEM,
    _EMOJI,
    _ERRORS,
    _FILES,
    _FOLLOWUPS,
    _HEREDOC_BLOCKS,
    _HOSTS,
    _HYPHEN_TERMS,
    _INTROS,
    _LANG_ALIASES,
    _LIBS,
    _LIST_ITEMS,
    _LOG_POOL,
    _MODELS,
    _OTHER_TOOLS,
    _P_CJK,
    _P_EMOJI,
    _P_LONG_TOOL,
    _P_MULTIMODAL,
    _P_XSS,
    _PNG_1PX,
    _PROJECTS,
    _REASONING,
    _REPL_BLOCKS,
    _SENTENCE_POOL,
    _SENTENCES,
    _SKILLS,
    _STEP_TITLES,
    _SYSTEM_NOTES,
    _TECH_TOOLS,
    _TERMINAL_CMDS,
    _TERMINAL_OUTPUTS,
    _TOOLCALL_TEXT,
    _TOPICS,
    _XSS_EXTRA,
    XSS_CORPUS,
)
from webui.demo.spec import _hex, _Spec, _wchoice

# --------------------------------------------------------------------------------------------
# Text: one generator object per session, all randomness from the session's own RNG
# --------------------------------------------------------------------------------------------

class _Filler(dict):
    """str.format_map mapping that draws only the placeholders a template uses."""

    __slots__ = ("text",)

    def __init__(self, text):
        super().__init__()
        self.text = text

    def __missing__(self, key):
        return self.text._value(key)


class _Text:
    def __init__(self, sp: _Spec):
        self.r = random.Random(sp.seed * 2)
        self.sp = sp
        self.topic = _TOPICS[sp.topic]
        self.words = self.topic[2]
        self.lang = self.topic[3]
        self.tech = self.topic[4]
        self.must = set(sp.must)
        self.project = self.r.choice(_PROJECTS)
        self.host = self.r.choice(_HOSTS)
        model = sp.model
        self.family = _MODELS[model][2] if model in _MODELS else "none"
        self.p_reason = (0.6 if sp.reasoning_on else 0.25) if self.family != "none" else 0.0
        self.filler = _Filler(self)
        # text_scale (see generate()): 1.0 takes exactly the historical code path, draw for draw
        ts = sp.text_scale if sp.text_scale is not None else 1.0
        self.ts = ts
        self.p_long = _P_LONG_TOOL if ts == 1.0 else min(1.0, _P_LONG_TOOL * ts)

    def n(self, k: int) -> int:
        """A count (sentences, lines, items) scaled by text_scale: at least 1, unchanged at 1.0."""
        if self.ts == 1.0:
            return k
        return max(1, int(round(k * self.ts)))

    def p(self, prob: float) -> float:
        """A probability of optional bulk (code blocks, pastes) scaled by text_scale."""
        if self.ts == 1.0:
            return prob
        return min(1.0, prob * self.ts)

    def has(self, tag: str) -> bool:
        if tag in self.must:
            self.must.discard(tag)
            return True
        return False

    def fill(self, tmpl: str) -> str:
        return tmpl.format_map(self.filler)

    def _value(self, key: str) -> str:
        r = self.r
        if key == "project":
            return self.project if r.random() < 0.8 else r.choice(_PROJECTS)
        if key == "host":
            return self.host if r.random() < 0.7 else r.choice(_HOSTS)
        if key in ("w", "w2", "word"):
            return r.choice(self.words)
        if key == "file":
            return r.choice(_FILES)
        if key == "error":
            return r.choice(_ERRORS)
        if key == "lib":
            return r.choice(_LIBS)
        if key == "city":
            return r.choice(_CITIES)
        raise KeyError(key)

    def para(self, k: int) -> str:
        """A paragraph: one topic sentence plus k-1 pooled ones."""
        r = self.r
        return " ".join([self.fill(r.choice(_SENTENCES))] + r.choices(_SENTENCE_POOL, k=self.n(k) - 1))

    def _extras(self, parts: list, *, allow_xss=True, xss_tag="") -> None:
        r = self.r
        if self.has("cjk"):
            parts.append("记忆断裂和Agent通信的问题，在大别山项目里也出现了。東京のサーバーです。안녕 세계")
        elif r.random() < _P_CJK:
            parts.append(r.choice(_CJK_SENTENCES))
        if self.has("emoji") or r.random() < _P_EMOJI:
            parts[-1] = parts[-1] + " " + "".join(r.choice(_EMOJI) for _ in range(r.randint(1, 3)))
        if allow_xss and (self.has(xss_tag) or r.random() < _P_XSS):
            if xss_tag and self.sp.must:
                parts.append("\n".join(XSS_CORPUS))
            else:
                parts.append(r.choice(XSS_CORPUS + _XSS_EXTRA))

    def code_block(self, lang: str | None = None) -> str:
        r = self.r
        for tag in ("code_python", "code_bash", "code_yaml", "code_json", "code_rust"):
            if tag in self.must:
                self.must.discard(tag)
                lang = tag[5:]
                break
        if lang is None:
            lang = self.lang if self.lang and r.random() < 0.75 else r.choice(("bash", "python", "json", "yaml"))
        return f"```{_LANG_ALIASES[lang]}\n{r.choice(_CODE[lang])}\n```"

    # ---- messages --------------------------------------------------------------------------
    def system(self, kind: str | None) -> str:
        if kind == "cron":
            return _CRON_SYSTEM
        if kind == "compaction":
            return (f"[CONTEXT COMPACTION] Earlier turns were summarized: the user is working on {self.project}; "
                    f"{self.r.choice(self.words)} was fixed.")
        return _SYSTEM_NOTES[0]

    def user(self, first: bool) -> str:
        r = self.r
        sp = self.sp
        if self.has("multimodal") or (not first and r.random() < _P_MULTIMODAL):
            text = r.choice(("What's in this screenshot?", "Can you read the error in this image?",
                             "Describe this docker dashboard screenshot.", "这张截图里的错误是什么？"))
            return "\x00json:" + json.dumps([{"type": "text", "text": text},
                                             {"type": "image_url",
                                              "image_url": {"url": "data:image/png;base64," + _PNG_1PX}}])
        if first and sp.kind == "subagent":
            parts = [self.fill(r.choice(("Investigate the {w} issue in {project} and report back.",
                                         "Find out why {file} breaks the {w} and summarize the fix.",
                                         "Research {w} options for {project}; return a short comparison.")))]
        elif first and sp.first == "cron" and sp.cron_prompt is not None:
            parts = [self.fill(_CRON_PROMPTS[sp.cron_prompt][1])]
        elif first:
            parts = [self.fill(r.choice(self.topic[1]))]
            if r.random() < 0.35:
                parts.append(self.para(r.randint(1, 3)))
            if r.random() < self.p(0.25):
                parts.append(self.paste())
        else:
            if r.random() < 0.06:
                return r.choice(_CJK_SENTENCES)
            parts = [self.fill(r.choice(_FOLLOWUPS))]
            if r.random() < 0.12:
                parts.append(self.para(r.randint(1, 2)))
            if r.random() < self.p(0.08):
                parts.append(self.paste())
        if self.has("hyphen") or r.random() < 0.03:
            parts.append(f"(see {r.choice(_HYPHEN_TERMS)} and {r.choice(_HYPHEN_TERMS)})")
        if self.has("docker") or r.random() < 0.04:
            parts.append("It runs in docker, if that matters.")
        self._extras(parts, xss_tag="xss_user")
        return "\n\n".join(parts)

    def paste(self) -> str:
        r = self.r
        x = r.random()
        if x < 0.4:
            return ("```\nTraceback (most recent call last):\n  File \"" + r.choice(_FILES) + "\", line "
                    + str(r.randint(2, 400)) + ", in <module>\n" + r.choice(_ERRORS) + "\n```")
        if x < 0.75:
            return "```\n" + "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(4, 20)))) + "\n```"
        return self.code_block()

    def assistant_final(self) -> str:
        r = self.r
        fill = self.fill
        parts = [fill(r.choice(_INTROS))]
        forced = bool(self.must)
        x = 0.5 if forced else r.random()
        if x < 0.18:  # short answer
            if r.random() < 0.6:
                parts.append(self.para(r.randint(1, 3)))
        elif x < 0.55:  # step by step
            parts.append(self.para(r.randint(2, 5)))
            parts.append("## " + fill(r.choice(("Plan", "What changed", "Steps", "Fix for the {w}",
                                                 "Why the {w} broke", "Next steps"))))
            for i, title in enumerate(r.sample(_STEP_TITLES, self.n(r.randint(2, 4)))):
                parts.append(f"### {i + 1}. {title}\n\n" + self.para(r.randint(1, 3)))
                if r.random() < self.p(0.5) or forced:
                    parts.append(self.code_block())
            parts.append("\n".join("- " + fill(r.choice(_LIST_ITEMS)) for _ in range(self.n(r.randint(2, 5)))))
        elif x < 0.75:  # comparison
            parts.append(self.para(r.randint(1, 3)))
            w = self.words
            rows = "\n".join(f"| {r.choice(w)} | {r.choice(('fast', 'safe', 'cheap', 'simple', 'well documented'))} | "
                             f"{r.choice(('risky', 'slower', 'more setup', 'costly', 'needs docker'))} |"
                             for _ in range(self.n(r.randint(3, 6))))
            parts.append("| option | pros | cons |\n|---|---|---|\n" + rows)
            parts.append("**Recommendation:** " + self.para(r.randint(2, 4)))
            parts.append("\n".join(f"{i + 1}. " + fill(r.choice(_LIST_ITEMS)) for i in range(self.n(r.randint(2, 5)))))
        else:  # explanation with code
            parts.append(self.para(r.randint(3, 6)))
            parts.append(self.code_block())
            if r.random() < 0.5:
                parts.append("\n".join("- " + fill(r.choice(_LIST_ITEMS)) for _ in range(self.n(r.randint(3, 6)))))
            parts.append(self.para(r.randint(1, 3)))
            if r.random() < 0.3:
                parts.append("> **Note:** " + self.para(1))
        if self.has("table"):
            parts.append("| step | status |\n|---|---|\n| build | ok |\n| deploy | pending |")
        if self.has("repl") or r.random() < 0.03:
            parts.append(r.choice(_REPL_BLOCKS))
        if self.has("heredoc") or r.random() < 0.02:
            parts.append(r.choice(_HEREDOC_BLOCKS))
        if r.random() < 0.05:
            parts.append(f"Related: `{r.choice(_HYPHEN_TERMS)}`, `{r.choice(_HYPHEN_TERMS)}`.")
        if r.random() < 0.12:
            parts.append(r.choice(("_Tip:_ you can re-run this any time with `/retry`.",
                                   "Want me to schedule this as a cron job?",
                                   "See [the docs](https://hermes-agent.nousresearch.com/docs) for details.")))
        self._extras(parts, xss_tag="xss_assistant")
        return "\n\n".join(parts)

    def toolcall_text(self):
        r = self.r
        x = r.random()
        if x < 0.4:
            return None
        if x < 0.44:
            return r.choice(_CJK_TOOLCALL_TEXT)
        text = self.fill(r.choice(_TOOLCALL_TEXT))
        return text + " " + r.choice(_EMOJI) if x > 0.96 else text

    def pick_tool(self) -> str:
        return _wchoice(self.r, _TECH_TOOLS if self.tech else _OTHER_TOOLS)

    def tool_args(self, name: str) -> dict:
        r = self.r
        xss = self.has("xss_args") or r.random() < _P_XSS
        w = r.choice(self.words)
        f = r.choice(_FILES)
        if name == "terminal":
            cmd = self.fill(r.choice(_TERMINAL_CMDS))
            if xss:
                cmd = f"echo '{r.choice(XSS_CORPUS)}' > /tmp/x.html"
            return {"command": cmd}
        if name == "read_file":
            return {"path": f}
        if name == "write_file":
            content = r.choice(_CODE[self.lang or "python"]) if not xss else "<html>" + "".join(XSS_CORPUS) + "</html>"
            return {"path": f, "content": content}
        if name == "patch":
            return {"path": f, "old_string": "timeout=1.0", "new_string": "timeout=30.0"}
        if name == "search_files":
            return {"pattern": w if not xss else XSS_CORPUS[0], "path": "src/"}
        if name == "execute_code":
            return {"code": r.choice(_CODE["python"])}
        if name == "web_search":
            return {"query": f"{w} {r.choice(self.words)} {self.project}" if not xss else XSS_CORPUS[1]}
        if name == "web_extract":
            return {"urls": [f"https://docs.example.com/{w.replace(' ', '-')}"]}
        if name == "browser_navigate":
            return {"url": f"https://en.wikipedia.org/wiki/{r.choice(_CITIES).replace(' ', '_')}"
                    if not xss else "javascript:alert(1)"}
        if name == "browser_click":
            return {"ref": f"e{r.randint(1, 40)}"}
        if name == "browser_type":
            return {"ref": f"e{r.randint(1, 40)}", "text": w if not xss else XSS_CORPUS[4]}
        if name == "browser_snapshot":
            return {}
        if name == "vision_analyze":
            return {"image_url": "/tmp/screenshot.png", "question": "What does this show?"}
        if name == "image_generate":
            return {"prompt": f"minimal geometric logo for {self.project}, {w}"}
        if name == "text_to_speech":
            return {"text": self.fill(r.choice(_SENTENCES))}
        if name == "delegate_task":
            return {"goal": self.fill("Investigate the {w} issue in {project} and report back"),
                    "toolsets": ["terminal", "file"]}
        if name == "session_search":
            return {"query": w, "limit": 3}
        if name == "send_message":
            return {"platform": r.choice(("slack", "telegram", "discord")), "message": self.fill(r.choice(_SENTENCES))}
        if name == "cronjob":
            return {"action": "create", "schedule": f"0 {r.randint(5, 9)} * * *",
                    "prompt": self.fill(r.choice(_CRON_PROMPTS)[1])}
        if name == "todo":
            return {"todos": [{"id": "1", "content": f"Fix {w}", "status": "in_progress"}]}
        if name == "memory":
            return {"action": "add", "content": self.fill("User's main project is {project}; deploys to {host}.")}
        if name == "clarify":
            return {"question": f"Which {w} do you mean?", "choices": ["first", "second"]}
        if name == "skill_view":
            return {"name": r.choice(_SKILLS)}
        return {}

    def long_lines(self, kind: str) -> str:
        r = self.r
        target = self.n(r.randint(5000, 20000))
        if kind == "read_file":
            src = r.choice(_CODE[self.lang or "python"]).split("\n")
            out, size, i = [], 0, 0
            while size < target:
                ln = f"{i + 1:6d}|{src[i % len(src)]}"
                out.append(ln)
                size += len(ln) + 1
                i += 1
            return "\n".join(out)
        if kind == "prose":
            return " ".join(r.choices(_SENTENCE_POOL, k=target // 90))
        return "\n".join(r.choices(_LOG_POOL, k=target // 75))

    def tool_result(self, name: str, args: dict) -> str:
        r = self.r
        long_ = self.has("long_tool") or r.random() < self.p_long
        xss = self.has("xss_result") or r.random() < _P_XSS
        w = r.choice(self.words)
        if name == "terminal":
            if long_:
                out = self.long_lines("log")
            elif r.random() < self.p(0.45):
                out = self.fill(r.choice(_TERMINAL_OUTPUTS))
            else:
                out = "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(2, 30))))
            if xss:
                out += "\n" + "\n".join(XSS_CORPUS)
            return json.dumps({"output": out, "exit_code": 0 if r.random() < 0.85 else 1, "error": None})
        if name == "read_file":
            if long_:
                content = self.long_lines("read_file")
            else:
                src = "\n".join(r.sample(_CODE[self.lang or "python"], min(self.n(2), len(_CODE[self.lang or "python"]))))
                content = "\n".join(f"{i + 1:6d}|{ln}" for i, ln in enumerate(src.split("\n")))
            if xss:
                content += "\n<!-- " + XSS_CORPUS[0] + " -->"
            return json.dumps({"content": content, "total_lines": content.count("\n") + 1, "path": args.get("path")})
        if name == "write_file":
            return json.dumps({"bytes_written": r.randint(120, 6000), "path": args.get("path")})
        if name == "patch":
            return json.dumps({"success": True, "diff": f"--- a/{args.get('path')}\n+++ b/{args.get('path')}\n@@\n-timeout=1.0\n+timeout=30.0\n"})
        if name == "search_files":
            k = self.n(r.randint(60, 200) if long_ else r.randint(1, 12))
            return json.dumps({"total_count": k, "matches": [
                {"path": r.choice(_FILES), "line": r.randint(1, 500), "content": self.fill("# TODO: {w} (chat-send)")}
                for _ in range(k)]})
        if name == "execute_code":
            out = (self.long_lines("log") if long_ else
                   "\n".join(r.choices(_LOG_POOL, k=self.n(r.randint(1, 12)))) if r.random() < 0.5 else f"{r.randint(1, 99999)}\n")
            return json.dumps({"status": "success", "output": out, "duration_seconds": round(r.uniform(0.2, 9), 2)})
        if name == "web_search":
            res = [{"title": f"{r.choice(self.words)} guide", "url": f"https://blog.example.com/{r.randint(1, 999)}",
                    "description": f"A practical look at {r.choice(self.words)} and {r.choice(self.words)}."}
                   for _ in range(self.n(r.randint(3, 5)))]
            if xss:
                res[0]["description"] = XSS_CORPUS[r.randrange(len(XSS_CORPUS))]
            return json.dumps({"success": True, "data": {"web": res}})
        if name == "web_extract":
            body = self.long_lines("prose") if long_ else " ".join(r.choices(_SENTENCE_POOL, k=self.n(r.randint(4, 24))))
            if xss:
                body += " " + " ".join(XSS_CORPUS)
            return json.dumps({"results": [{"url": f"https://docs.example.com/{w.replace(' ', '-')}",
                                            "title": f"{w} docs", "content": f"# {w}\n\n{body}"}]})
        if name == "browser_navigate":
            return json.dumps({"success": True, "url": args.get("url"), "title": f"{w} \u2014 Example"})
        if name in ("browser_click", "browser_type"):
            return json.dumps({"success": True})
        if name == "browser_snapshot":
            snap = f"- heading \"{w}\" [ref=e1]\n- button \"Sign in\" [ref=e2]\n- link \"Pricing\" [ref=e3]"
            if xss:
                snap += "\n- iframe \"<iframe src=javascript:alert(1)>\" [ref=e4]"
            return json.dumps({"success": True, "snapshot": snap})
        if name == "vision_analyze":
            return json.dumps({"success": True, "analysis": f"The screenshot shows an error dialog: {r.choice(_ERRORS)}"})
        if name == "image_generate":
            return json.dumps({"success": True, "image": f"https://fal.media/files/{_hex(r, 8)}.png"})
        if name == "text_to_speech":
            return json.dumps({"success": True, "file_path": f"/tmp/tts_{_hex(r, 8)}.ogg"})
        if name == "delegate_task":
            return json.dumps({"results": [{"status": "completed",
                                            "summary": f"Checked the {w}; root cause was {r.choice(_ERRORS)}."}]})
        if name == "session_search":
            return json.dumps({"success": True, "results": [{"session_id": "20260101_120000_ab12cd",
                                                             "summary": f"Earlier chat about {w}"}]})
        if name == "send_message":
            return json.dumps({"success": True, "platform": args.get("platform")})
        if name == "cronjob":
            return json.dumps({"success": True, "job_id": _hex(r, 12)})
        if name == "todo":
            return json.dumps({"todos": args.get("todos"), "summary": {"in_progress": 1}})
        if name == "memory":
            return json.dumps({"success": True, "message": "Entry added."})
        if name == "clarify":
            return json.dumps({"answer": "first"})
        if name == "skill_view":
            return json.dumps({"name": args.get("name"), "content": f"# {args.get('name')}\n\nStep-by-step instructions..."})
        return json.dumps({"success": True})

    def reasoning(self):
        """(reasoning, reasoning_content, reasoning_details, codex_reasoning_items) or None."""
        r = self.r
        forced = self.has("xss_reasoning")
        if not forced and (self.family == "none" or r.random() >= self.p_reason):
            return None
        text = " ".join(self.fill(r.choice(_REASONING)) for _ in range(self.n(r.randint(1, 4))))
        if forced or r.random() < _P_XSS:
            text += ' Careful: the page contains <a href="javascript:alert(1)">x</a> and <script>alert(1)</script>.'
        fam = self.family
        if fam == "anthropic":
            det = json.dumps([{"type": "reasoning.text", "text": text, "signature": "EuYB" + _hex(r, 40),
                               "format": "anthropic-claude-v1", "index": 0}])
            return text, None, det, None
        if fam == "openai":
            if r.random() < 0.55:
                items = json.dumps([{"type": "reasoning", "id": "rs_" + _hex(r, 32),
                                     "encrypted_content": "gAAAAB" + _hex(r, 48),
                                     "summary": [{"type": "summary_text", "text": text}]}])
                return text, None, None, items
            return text, None, None, None
        if fam == "content":
            return text, text, None, None
        return text, None, None, None
