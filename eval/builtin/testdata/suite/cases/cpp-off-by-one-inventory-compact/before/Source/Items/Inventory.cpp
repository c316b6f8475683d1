// Inventory.cpp - the player's backpack: fixed slots, stackable items.
#include "Inventory.h"

#include <algorithm>

#include "Items/ItemDatabase.h"

namespace game {

Inventory::Inventory(size_t slotCount) : slots_(slotCount) {}

int Inventory::Add(ItemId id, int count) {
    const ItemDef& def = ItemDatabase::Get(id);
    // Top up existing stacks first, then fill empty slots.
    for (Slot& slot : slots_) {
        if (count == 0) {
            break;
        }
        if (slot.id == id && slot.count < def.maxStack) {
            int moved = std::min(count, def.maxStack - slot.count);
            slot.count += moved;
            count -= moved;
        }
    }
    for (Slot& slot : slots_) {
        if (count == 0) {
            break;
        }
        if (slot.IsEmpty()) {
            int moved = std::min(count, def.maxStack);
            slot.id = id;
            slot.count = moved;
            count -= moved;
        }
    }
    return count;  // what did not fit
}

int Inventory::CountOf(ItemId id) const {
    int total = 0;
    for (const Slot& slot : slots_) {
        if (slot.id == id) {
            total += slot.count;
        }
    }
    return total;
}

bool Inventory::Remove(ItemId id, int count) {
    if (CountOf(id) < count) {
        return false;
    }
    for (auto it = slots_.rbegin(); it != slots_.rend() && count > 0; ++it) {
        if (it->id == id) {
            int taken = std::min(count, it->count);
            it->count -= taken;
            count -= taken;
            if (it->count == 0) {
                it->Clear();
            }
        }
    }
    return true;
}

}  // namespace game
