// The shared library's own translation unit: everything it exports comes from strix_zmq_core
// (whole-archive), limited to zmq_* by libzmq.map.
namespace {
[[maybe_unused]] constexpr int translation_unit_is_not_empty = 0;
}  // namespace
