// DamageSystem.cpp - applies queued damage events once per simulation tick.
#include "DamageSystem.h"

#include "Combat/DamageEvent.h"
#include "Core/Log.h"
#include "World/EntityRegistry.h"
#include "World/HealthComponent.h"

namespace game {

DamageSystem::DamageSystem(EntityRegistry& registry, EventBus& bus)
    : registry_(registry), bus_(bus) {}

void DamageSystem::Enqueue(const DamageEvent& ev) {
    pending_.push_back(ev);
}

void DamageSystem::Tick(float dt) {
    (void)dt;
    for (const DamageEvent& ev : pending_) {
        Entity* target = registry_.Find(ev.targetId);
        if (target == nullptr) {
            // The target can die and be removed earlier in the same tick.
            continue;
        }
        auto* health = target->Get<HealthComponent>();
        if (health == nullptr || health->invulnerable) {
            continue;
        }
        float amount = ev.amount * health->ResistanceFor(ev.type);
        health->current -= amount;
        bus_.Publish(DamageApplied{ev.targetId, ev.sourceId, amount});
        if (health->current <= 0.0f && !health->dead) {
            health->dead = true;
            bus_.Publish(EntityKilled{ev.targetId, ev.sourceId});
        }
    }
    pending_.clear();
}

}  // namespace game
