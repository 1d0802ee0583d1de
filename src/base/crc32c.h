/* CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78): the
 * checksum of checkpoint sections (iSCSI's, RFC 3720 appendix B.4). */
#ifndef ZERO_CRC32C_H
#define ZERO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over n bytes: start with crc = 0; zero_crc32c(0, "123456789", 9)
 * is 0xE3069283. Chaining calls over consecutive pieces gives the CRC of the whole. */
uint32_t zero_crc32c(uint32_t crc, const void *data, size_t n);

#endif
