// The page's own files (web/page/), compiled into kgym by web/embed_assets.cmake: the view
// works offline and from any directory.
#pragma once

#include <string>
#include <vector>

namespace kgym::web {

struct page_asset {
  std::string path;          // "/index.html", "/app.js", ...
  std::string content_type;
  std::string body;
};

const std::vector<page_asset>& page_assets();

}  // namespace kgym::web
