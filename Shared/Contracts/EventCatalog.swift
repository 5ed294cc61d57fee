/// Every event type Splash publishes, by its `ce_type` (docs/events.md). Each has a JSON
/// Schema and an example under `Shared/Contracts/Schemas/`, named after the type.
public enum EventCatalog {
    public static let all: [any DomainEvent.Type] = [
        UserRegistered.self, ProfileUpdated.self, OnboardingCompleted.self, EmailConfirmed.self, EmailChanged.self, UserDeleted.self,
        EditRequested.self, EditCompleted.self, EditFailed.self,
        PhotoLiked.self, PhotoUnliked.self, PostCreated.self, PostDeleted.self, CollectionChanged.self,
        OrderPlaced.self, OrderStatusChanged.self, DriverAssigned.self, DriverLocationUpdated.self, RestaurantChanged.self, OrderArriving.self,
        SocialUserErased.self, RenderUserErased.self, CatalogUserErased.self, TrackingUserErased.self, NotifyUserErased.self,
        OrderPlacedV1.self, OrderStatusChangedV1.self, DriverAssignedV1.self, DriverLocationUpdatedV1.self,
    ]
}
