/*
 * A loadable SQLite FTS5 tokenizer named "cjk_unicode61", written for Hermes Logbook's test
 * fixtures (tests/oracle/README.md). Hermes 0.22 creates its `messages_fts_cjk` index only when a
 * tokenizer of that name loads; its packaging ships none. This one behaves as hermes_state_fts.py
 * describes the upstream one: the built-in unicode61 tokenizer splits the text, then every
 * maximal run of CJK characters inside a token is emitted as overlapping two-character tokens
 * (a run of one character as itself), and everything else passes through as unicode61 gave it.
 *
 * CJK here is the set Hermes's search treats as CJK (hermes_state_search._CJK_RANGES): the
 * unified ideographs and extensions A and B, CJK symbols and punctuation, Hiragana, Katakana and
 * Hangul syllables.
 *
 * Build:  gcc -O2 -fPIC -shared fts5_cjk_bigram.c -o libfts5_cjk.so   (see build.sh)
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <stdlib.h>
#include <string.h>

static int is_cjk(unsigned int cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x3000 && cp <= 0x303F) ||
           (cp >= 0x3040 && cp <= 0x309F) || (cp >= 0x30A0 && cp <= 0x30FF) ||
           (cp >= 0xAC00 && cp <= 0xD7AF);
}

/* Decodes one UTF-8 character at s[*i] (s has n bytes); advances *i. Invalid bytes count as one
 * non-CJK character each. */
static unsigned int next_cp(const char *s, int n, int *i) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned int c = u[*i];
    int len = 1;
    if (c >= 0xF0 && *i + 3 < n) {
        c = ((c & 0x07u) << 18) | ((u[*i + 1] & 0x3Fu) << 12) | ((u[*i + 2] & 0x3Fu) << 6) |
            (u[*i + 3] & 0x3Fu);
        len = 4;
    } else if (c >= 0xE0 && *i + 2 < n) {
        c = ((c & 0x0Fu) << 12) | ((u[*i + 1] & 0x3Fu) << 6) | (u[*i + 2] & 0x3Fu);
        len = 3;
    } else if (c >= 0xC0 && *i + 1 < n) {
        c = ((c & 0x1Fu) << 6) | (u[*i + 1] & 0x3Fu);
        len = 2;
    }
    *i += len;
    return c;
}

typedef struct Bigram {
    fts5_api *api;
    fts5_tokenizer base;   /* unicode61's methods */
    Fts5Tokenizer *inner;  /* a unicode61 instance */
} Bigram;

typedef struct Pass {
    void *ctx;
    int (*emit)(void *, int, const char *, int, int, int);
    const char *text;      /* the whole text being tokenized (for original bytes) */
    int ntext;
} Pass;

/* Splits one unicode61 token. `tok` is the folded token, [start, end) its bytes in the original
 * text. Folding never turns a CJK character into a non-CJK one or back, so the folded token and
 * the original bytes have the same sequence of CJK and non-CJK segments; CJK bytes are copied as
 * they are, so the original offsets serve for the emitted tokens. */
static int split_token(Pass *p, int flags, const char *tok, int ntok, int start, int end) {
    int ti = 0, oi = start, rc = SQLITE_OK;
    int has_cjk = 0;
    for (int k = 0; k < ntok;) {
        if (is_cjk(next_cp(tok, ntok, &k))) { has_cjk = 1; break; }
    }
    if (!has_cjk) return p->emit(p->ctx, flags, tok, ntok, start, end);
    while (ti < ntok && rc == SQLITE_OK) {
        int t0 = ti, o0 = oi, ti_peek = ti;
        unsigned int cp = next_cp(tok, ntok, &ti_peek);
        if (is_cjk(cp)) {
            /* the run, walked once: each character after the first closes a bigram with the one
             * before it; a run of one character is emitted as itself */
            int t = ti, prev = -1, count = 0;
            while (t < ntok && rc == SQLITE_OK) {
                int t_next = t;
                if (!is_cjk(next_cp(tok, ntok, &t_next))) break;
                if (prev >= 0)
                    rc = p->emit(p->ctx, flags, tok + prev, t_next - prev, o0 + (prev - t0),
                                 o0 + (t_next - t0));
                prev = t;
                count++;
                t = t_next;
            }
            if (count == 1 && rc == SQLITE_OK)
                rc = p->emit(p->ctx, flags, tok + t0, t - t0, o0, o0 + (t - t0));
            oi = o0 + (t - t0);
            ti = t;
        } else {
            /* a non-CJK segment: its end in the folded token and in the original text */
            int t = ti;
            while (t < ntok) {
                int t_next = t;
                if (is_cjk(next_cp(tok, ntok, &t_next))) break;
                t = t_next;
            }
            int o = oi;
            while (o < end) {
                int o_next = o;
                if (is_cjk(next_cp(p->text, p->ntext, &o_next))) break;
                o = o_next;
            }
            rc = p->emit(p->ctx, flags, tok + t0, t - t0, o0, o);
            ti = t;
            oi = o;
        }
    }
    return rc;
}

static int on_token(void *ctx, int flags, const char *tok, int ntok, int start, int end) {
    return split_token((Pass *)ctx, flags, tok, ntok, start, end);
}

static int bigram_create(void *api_ptr, const char **args, int nargs, Fts5Tokenizer **out) {
    fts5_api *api = (fts5_api *)api_ptr;
    Bigram *b = (Bigram *)sqlite3_malloc(sizeof(Bigram));
    void *user = 0;
    int rc;
    if (!b) return SQLITE_NOMEM;
    memset(b, 0, sizeof(*b));
    b->api = api;
    rc = api->xFindTokenizer(api, "unicode61", &user, &b->base);
    if (rc == SQLITE_OK) rc = b->base.xCreate(user, args, nargs, &b->inner);
    if (rc != SQLITE_OK) {
        sqlite3_free(b);
        return rc;
    }
    *out = (Fts5Tokenizer *)b;
    return SQLITE_OK;
}

static void bigram_delete(Fts5Tokenizer *t) {
    Bigram *b = (Bigram *)t;
    if (b->inner) b->base.xDelete(b->inner);
    sqlite3_free(b);
}

static int bigram_tokenize(Fts5Tokenizer *t, void *ctx, int flags, const char *text, int ntext,
                           int (*emit)(void *, int, const char *, int, int, int)) {
    Bigram *b = (Bigram *)t;
    Pass p = {ctx, emit, text, ntext};
    return b->base.xTokenize(b->inner, &p, flags, text, ntext, on_token);
}

static fts5_api *get_fts5_api(sqlite3 *db) {
    fts5_api *api = 0;
    sqlite3_stmt *stmt = 0;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, 0) == SQLITE_OK) {
        sqlite3_bind_pointer(stmt, 1, (void *)&api, "fts5_api_ptr", 0);
        sqlite3_step(stmt);
    }
    sqlite3_finalize(stmt);
    return api;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_fts5cjkbigram_init(sqlite3 *db, char **err, const sqlite3_api_routines *routines) {
    fts5_tokenizer tok = {bigram_create, bigram_delete, bigram_tokenize};
    fts5_api *api;
    SQLITE_EXTENSION_INIT2(routines);
    api = get_fts5_api(db);
    if (!api) {
        *err = sqlite3_mprintf("FTS5 is not available");
        return SQLITE_ERROR;
    }
    return api->xCreateTokenizer(api, "cjk_unicode61", (void *)api, &tok, 0);
}

/* SQLite derives the entry point from the file name Hermes loads: "libfts5_cjk.so" keeps the
 * letters after "lib", so sqlite3_ftscjk_init. */
int sqlite3_ftscjk_init(sqlite3 *db, char **err, const sqlite3_api_routines *routines) {
    return sqlite3_fts5cjkbigram_init(db, err, routines);
}
