#include "core/common/thread_name.h"

#include <pthread.h>

namespace leeway {

void NameThisThread(absl::string_view name) {
  const std::string cut(name.substr(0, kMaxThreadName));
  pthread_setname_np(pthread_self(), cut.c_str());
}

std::string ThisThreadName() {
  char name[kMaxThreadName + 1] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return "";
  return name;
}

}  // namespace leeway
