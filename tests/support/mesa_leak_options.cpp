// Processes that load Mesa's drivers (lavapipe for Vulkan, llvmpipe for OpenGL) get no
// leak report in the address-sanitizer build: the drivers leave allocations behind when
// they are unloaded, in frames LeakSanitizer cannot attribute or suppress. Address and
// undefined-behaviour checking stay on; the rest of the suite keeps leak checking.
extern "C" const char* __lsan_default_options() { return "detect_leaks=0"; }
