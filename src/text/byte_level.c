/* GPT-2's byte-level alphabet: each of the 256 bytes is written as a printable
 * character, so a byte-level vocabulary is one of ordinary strings. The printable
 * bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves; the other 68 take the code
 * points U+0100, U+0101, ... in byte order. The tables are that rule written out
 * (constant data: encode reads them from any thread). */
#include "text/text_internal.h"

struct byte_char {
    const char *utf8;
    size_t len;
};

/* byte -> its character's UTF-8 */
static const struct byte_char byte_chars[256] = {
    {"\xc4\x80", 2}, {"\xc4\x81", 2}, {"\xc4\x82", 2}, {"\xc4\x83", 2}, {"\xc4\x84", 2},
    {"\xc4\x85", 2}, {"\xc4\x86", 2}, {"\xc4\x87", 2}, {"\xc4\x88", 2}, {"\xc4\x89", 2},
    {"\xc4\x8a", 2}, {"\xc4\x8b", 2}, {"\xc4\x8c", 2}, {"\xc4\x8d", 2}, {"\xc4\x8e", 2},
    {"\xc4\x8f", 2}, {"\xc4\x90", 2}, {"\xc4\x91", 2}, {"\xc4\x92", 2}, {"\xc4\x93", 2},
    {"\xc4\x94", 2}, {"\xc4\x95", 2}, {"\xc4\x96", 2}, {"\xc4\x97", 2}, {"\xc4\x98", 2},
    {"\xc4\x99", 2}, {"\xc4\x9a", 2}, {"\xc4\x9b", 2}, {"\xc4\x9c", 2}, {"\xc4\x9d", 2},
    {"\xc4\x9e", 2}, {"\xc4\x9f", 2}, {"\xc4\xa0", 2}, {"\x21", 1},     {"\x22", 1},
    {"\x23", 1},     {"\x24", 1},     {"\x25", 1},     {"\x26", 1},     {"\x27", 1},
    {"\x28", 1},     {"\x29", 1},     {"\x2a", 1},     {"\x2b", 1},     {"\x2c", 1},
    {"\x2d", 1},     {"\x2e", 1},     {"\x2f", 1},     {"\x30", 1},     {"\x31", 1},
    {"\x32", 1},     {"\x33", 1},     {"\x34", 1},     {"\x35", 1},     {"\x36", 1},
    {"\x37", 1},     {"\x38", 1},     {"\x39", 1},     {"\x3a", 1},     {"\x3b", 1},
    {"\x3c", 1},     {"\x3d", 1},     {"\x3e", 1},     {"\x3f", 1},     {"\x40", 1},
    {"\x41", 1},     {"\x42", 1},     {"\x43", 1},     {"\x44", 1},     {"\x45", 1},
    {"\x46", 1},     {"\x47", 1},     {"\x48", 1},     {"\x49", 1},     {"\x4a", 1},
    {"\x4b", 1},     {"\x4c", 1},     {"\x4d", 1},     {"\x4e", 1},     {"\x4f", 1},
    {"\x50", 1},     {"\x51", 1},     {"\x52", 1},     {"\x53", 1},     {"\x54", 1},
    {"\x55", 1},     {"\x56", 1},     {"\x57", 1},     {"\x58", 1},     {"\x59", 1},
    {"\x5a", 1},     {"\x5b", 1},     {"\x5c", 1},     {"\x5d", 1},     {"\x5e", 1},
    {"\x5f", 1},     {"\x60", 1},     {"\x61", 1},     {"\x62", 1},     {"\x63", 1},
    {"\x64", 1},     {"\x65", 1},     {"\x66", 1},     {"\x67", 1},     {"\x68", 1},
    {"\x69", 1},     {"\x6a", 1},     {"\x6b", 1},     {"\x6c", 1},     {"\x6d", 1},
    {"\x6e", 1},     {"\x6f", 1},     {"\x70", 1},     {"\x71", 1},     {"\x72", 1},
    {"\x73", 1},     {"\x74", 1},     {"\x75", 1},     {"\x76", 1},     {"\x77", 1},
    {"\x78", 1},     {"\x79", 1},     {"\x7a", 1},     {"\x7b", 1},     {"\x7c", 1},
    {"\x7d", 1},     {"\x7e", 1},     {"\xc4\xa1", 2}, {"\xc4\xa2", 2}, {"\xc4\xa3", 2},
    {"\xc4\xa4", 2}, {"\xc4\xa5", 2}, {"\xc4\xa6", 2}, {"\xc4\xa7", 2}, {"\xc4\xa8", 2},
    {"\xc4\xa9", 2}, {"\xc4\xaa", 2}, {"\xc4\xab", 2}, {"\xc4\xac", 2}, {"\xc4\xad", 2},
    {"\xc4\xae", 2}, {"\xc4\xaf", 2}, {"\xc4\xb0", 2}, {"\xc4\xb1", 2}, {"\xc4\xb2", 2},
    {"\xc4\xb3", 2}, {"\xc4\xb4", 2}, {"\xc4\xb5", 2}, {"\xc4\xb6", 2}, {"\xc4\xb7", 2},
    {"\xc4\xb8", 2}, {"\xc4\xb9", 2}, {"\xc4\xba", 2}, {"\xc4\xbb", 2}, {"\xc4\xbc", 2},
    {"\xc4\xbd", 2}, {"\xc4\xbe", 2}, {"\xc4\xbf", 2}, {"\xc5\x80", 2}, {"\xc5\x81", 2},
    {"\xc5\x82", 2}, {"\xc2\xa1", 2}, {"\xc2\xa2", 2}, {"\xc2\xa3", 2}, {"\xc2\xa4", 2},
    {"\xc2\xa5", 2}, {"\xc2\xa6", 2}, {"\xc2\xa7", 2}, {"\xc2\xa8", 2}, {"\xc2\xa9", 2},
    {"\xc2\xaa", 2}, {"\xc2\xab", 2}, {"\xc2\xac", 2}, {"\xc5\x83", 2}, {"\xc2\xae", 2},
    {"\xc2\xaf", 2}, {"\xc2\xb0", 2}, {"\xc2\xb1", 2}, {"\xc2\xb2", 2}, {"\xc2\xb3", 2},
    {"\xc2\xb4", 2}, {"\xc2\xb5", 2}, {"\xc2\xb6", 2}, {"\xc2\xb7", 2}, {"\xc2\xb8", 2},
    {"\xc2\xb9", 2}, {"\xc2\xba", 2}, {"\xc2\xbb", 2}, {"\xc2\xbc", 2}, {"\xc2\xbd", 2},
    {"\xc2\xbe", 2}, {"\xc2\xbf", 2}, {"\xc3\x80", 2}, {"\xc3\x81", 2}, {"\xc3\x82", 2},
    {"\xc3\x83", 2}, {"\xc3\x84", 2}, {"\xc3\x85", 2}, {"\xc3\x86", 2}, {"\xc3\x87", 2},
    {"\xc3\x88", 2}, {"\xc3\x89", 2}, {"\xc3\x8a", 2}, {"\xc3\x8b", 2}, {"\xc3\x8c", 2},
    {"\xc3\x8d", 2}, {"\xc3\x8e", 2}, {"\xc3\x8f", 2}, {"\xc3\x90", 2}, {"\xc3\x91", 2},
    {"\xc3\x92", 2}, {"\xc3\x93", 2}, {"\xc3\x94", 2}, {"\xc3\x95", 2}, {"\xc3\x96", 2},
    {"\xc3\x97", 2}, {"\xc3\x98", 2}, {"\xc3\x99", 2}, {"\xc3\x9a", 2}, {"\xc3\x9b", 2},
    {"\xc3\x9c", 2}, {"\xc3\x9d", 2}, {"\xc3\x9e", 2}, {"\xc3\x9f", 2}, {"\xc3\xa0", 2},
    {"\xc3\xa1", 2}, {"\xc3\xa2", 2}, {"\xc3\xa3", 2}, {"\xc3\xa4", 2}, {"\xc3\xa5", 2},
    {"\xc3\xa6", 2}, {"\xc3\xa7", 2}, {"\xc3\xa8", 2}, {"\xc3\xa9", 2}, {"\xc3\xaa", 2},
    {"\xc3\xab", 2}, {"\xc3\xac", 2}, {"\xc3\xad", 2}, {"\xc3\xae", 2}, {"\xc3\xaf", 2},
    {"\xc3\xb0", 2}, {"\xc3\xb1", 2}, {"\xc3\xb2", 2}, {"\xc3\xb3", 2}, {"\xc3\xb4", 2},
    {"\xc3\xb5", 2}, {"\xc3\xb6", 2}, {"\xc3\xb7", 2}, {"\xc3\xb8", 2}, {"\xc3\xb9", 2},
    {"\xc3\xba", 2}, {"\xc3\xbb", 2}, {"\xc3\xbc", 2}, {"\xc3\xbd", 2}, {"\xc3\xbe", 2},
    {"\xc3\xbf", 2}};

/* U+0100 + k -> the k-th byte that is not printable */
static const unsigned char unprintable[68] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
    0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b,
    0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x7f, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95,
    0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xad};

const char *tk_byte_char(unsigned char b, size_t *len)
{
    *len = byte_chars[b].len;
    return byte_chars[b].utf8;
}

int tk_char_byte(uint32_t c)
{
    if (c >= 0x100 && c < 0x100 + sizeof unprintable)
        return unprintable[c - 0x100];
    const int printable =
        (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    return printable ? (int)c : -1; /* a byte that stands for itself */
}
