// MD5 (RFC 1321, computed by OpenSSL) of a byte string, as lower-case hex: PyTorch's structured trace marks each
// payload with it ("has_payload") and tlparse checks it, so the exported trace must carry it.
// Not for security. Private to replay/inspect.
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace dynrep::replay {

std::string md5Hex(std::string_view bytes);

}  // namespace dynrep::replay
