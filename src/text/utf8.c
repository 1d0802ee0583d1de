/* UTF-8: validation, decoding, the lossy repair of invalid input, character classes. */
#include <utf8proc.h>

#include "text/text_internal.h"

/* The range the second byte of a sequence led by b must fall in (Unicode table 3-7):
 * what keeps out overlong forms, surrogates and code points above U+10FFFF. */
static int second_byte_ok(unsigned char lead, unsigned char b)
{
    switch (lead) {
    case 0xE0:
        return b >= 0xA0 && b <= 0xBF;
    case 0xED:
        return b >= 0x80 && b <= 0x9F;
    case 0xF0:
        return b >= 0x90 && b <= 0xBF;
    case 0xF4:
        return b >= 0x80 && b <= 0x8F;
    default:
        return b >= 0x80 && b <= 0xBF;
    }
}

static size_t sequence_len(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        return 2;
    if (lead >= 0xE0 && lead <= 0xEF)
        return 3;
    if (lead >= 0xF0 && lead <= 0xF4)
        return 4;
    return 0;
}

/* How many bytes at p start a valid sequence (a maximal subpart when < the lead's length). */
static size_t valid_prefix(const unsigned char *p, size_t n, size_t *want)
{
    *want = sequence_len(p[0]);
    if (*want <= 1)
        return *want;
    size_t k = 1;
    if (k < n && second_byte_ok(p[0], p[1]))
        k++;
    else
        return k;
    while (k < *want && k < n && (p[k] & 0xC0) == 0x80)
        k++;
    return k;
}

size_t tk_utf8_valid_len(const unsigned char *p, size_t n)
{
    if (n == 0)
        return 0;
    size_t want, k = valid_prefix(p, n, &want);
    return k == want ? k : 0;
}

uint32_t tk_utf8_decode(const unsigned char *p, size_t len)
{
    switch (len) {
    case 1:
        return p[0];
    case 2:
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    case 3:
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    default:
        return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
               (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
}

size_t tk_utf8_encode(uint32_t c, char out[4])
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (char)(0x80 | (c >> 6 & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

int tk_utf8_repair(const char *text, size_t n, struct tk_buf *out, int64_t *replaced)
{
    static const char fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    const unsigned char *p = (const unsigned char *)text;
    out->n = 0;
    if (tk_buf_reserve(out, n + 1))
        return ZERO_ENOMEM;
    size_t i = 0, run = 0; /* run: the valid bytes not copied yet, ending at i */
    while (i < n) {
        if (p[i] < 0x80) {
            i++, run++;
            continue;
        }
        size_t want, k = valid_prefix(p + i, n - i, &want);
        if (want && k == want) {
            i += k, run += k;
            continue;
        }
        if (tk_buf_put(out, p + i - run, run) || tk_buf_put(out, fffd, 3))
            return ZERO_ENOMEM;
        ++*replaced;
        i += k ? k : 1;
        run = 0;
    }
    if (tk_buf_put(out, p + i - run, run))
        return ZERO_ENOMEM;
    return tk_buf_nul(out);
}

int tk_is_whitespace(uint32_t c)
{
    /* Unicode's White_Space property (PropList.txt), what char::is_whitespace tests */
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

int tk_is_word_char(uint32_t c)
{
    if (c == '_')
        return 1;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}
