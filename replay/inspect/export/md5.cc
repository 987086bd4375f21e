// md5Hex through OpenSSL's libcrypto (EVP), the digest PyTorch's trace puts in `has_payload`.
#include "export/md5.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace dynrep::replay {

std::string md5Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_md5(), nullptr) != 1)
    throw std::runtime_error("OpenSSL could not compute an MD5 digest");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace dynrep::replay
