/* errors.c - descriptions of the SPS_E* codes. */
#include "stepscope.h"

const char *sps_strerror(int err) {
    switch (err) {
    case SPS_OK: return "success";
    case SPS_EINVAL: return "invalid argument";
    case SPS_ENOMEM: return "out of memory or record full";
    case SPS_EIO: return "input/output error";
    case SPS_EFORMAT: return "malformed record or report";
    case SPS_EVERSION: return "unsupported record format version";
    case SPS_ESTATE: return "not valid in the current state";
    case SPS_EUNSUPPORTED: return "not supported here";
    default: return "unknown error";
    }
}
