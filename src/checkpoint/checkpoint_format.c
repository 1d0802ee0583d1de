/* Rank-file headers (layout in checkpoint_internal.h): little-endian fields
 * written byte by byte, so the format does not depend on the host's struct
 * layout, and a CRC32C over the first 60 bytes. */
#include <string.h>

#include "checkpoint_internal.h"
#include "base/crc32c.h"

void ckpt_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

void ckpt_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t ckpt_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t ckpt_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void seal(unsigned char *h)
{
    ckpt_put_u32(h + 60, zero_crc32c(0, h, 60));
}

void ckpt_file_header(unsigned char out[CKPT_HEADER_BYTES], const struct ckpt_meta *m, int rank)
{
    memset(out, 0, CKPT_HEADER_BYTES);
    memcpy(out, CKPT_FILE_MAGIC, 8);
    ckpt_put_u32(out + 8, CKPT_FORMAT_VERSION);
    ckpt_put_u32(out + 12, (uint32_t)rank);
    ckpt_put_u32(out + 16, (uint32_t)m->world);
    ckpt_put_u32(out + 20, (uint32_t)(m->nunits * m->nkinds));
    ckpt_put_u64(out + 24, m->id);
    ckpt_put_u64(out + 32, (uint64_t)m->chunk);
    ckpt_put_u64(out + 40, (uint64_t)m->global_steps);
    seal(out);
}

void ckpt_section_header(unsigned char out[CKPT_HEADER_BYTES], int unit, int kind, int64_t begin,
                         int64_t count, int64_t chunk)
{
    memset(out, 0, CKPT_HEADER_BYTES);
    memcpy(out, CKPT_SECTION_MAGIC, 4);
    ckpt_put_u32(out + 4, (uint32_t)unit);
    ckpt_put_u32(out + 8, (uint32_t)kind);
    ckpt_put_u64(out + 16, (uint64_t)begin);
    ckpt_put_u64(out + 24, (uint64_t)count);
    ckpt_put_u64(out + 32, (uint64_t)chunk);
    seal(out);
}
