// shared_buffer's release hook, out of line: the common release path stays small and inline.
#include <strix/core/shared_buffer.hpp>

namespace strix {

void shared_buffer::destroy_hooked(shared_buffer* p) noexcept {
    const release_hook hook = *p->hook_slot();
    free_block(p, block_bytes(p->size_, true));
    hook.fn(hook);
}

}  // namespace strix
