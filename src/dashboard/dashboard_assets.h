// The dashboard's page, script and style sheet (static/), compiled in.
#pragma once

namespace orb::dashboard_assets {

extern const char* const kIndexHtml;
extern const char* const kAppJs;
extern const char* const kStyleCss;

}  // namespace orb::dashboard_assets
